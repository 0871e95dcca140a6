"""Event streams that a client keeps open through a rolling restart, each read on its own thread.

`FollowedStream` reads one SSE stream and, when it ends, opens it again with `Last-Event-ID` (as an
EventSource or an MCP SDK client does), through the balancer; every event it ever got is kept in order.
`ListenStream` reads one 2026-07-28 subscriptions/listen, which is not resumable: it only records.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.e2e.rolling_balancer import http_client
from tests.e2e.sse_client import Event, EventParser

__all__ = ["ENDED", "FollowedStream", "ListenStream", "read_events"]

WAIT_S = 20.0
# A stream that keeps failing to reopen is a failure, not something to retry forever.
MAX_REOPENS = 50
ENDED = object()

Opener = Callable[[httpx.Client, str | None], httpx.Response]


def read_events(response: httpx.Response, keep_empty: bool = False):
    """Yield a response's events until its body ends; a connection cut short ends it too."""
    parser = EventParser(keep_empty)
    try:
        for line in response.iter_lines():
            event = parser.feed(line)
            if event is not None:
                yield event
    except (httpx.RemoteProtocolError, httpx.ReadError):
        return  # the server went away mid-stream: what resumption is for


class FollowedStream:
    """One resumable SSE stream, reopened with Last-Event-ID each time it ends, until stop()."""

    def __init__(self, opener: Opener, name: str) -> None:
        self.opener = opener
        self.name = name
        self.events: list[Event] = []
        self.statuses: list[int] = []
        self.problems: list[str] = []
        self.last_event_id: str | None = None
        self.connections = 0
        self.changed = threading.Condition()
        self.stopping = False
        self.http = http_client()
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)

    def start(self) -> FollowedStream:
        """Open the stream (on the reader thread)."""
        self.thread.start()
        return self

    def run(self) -> None:
        """Read, and reopen after each end, until stopped or the reopen budget is spent."""
        while not self.stopping and self.connections < MAX_REOPENS:
            try:
                response = self.opener(self.http, self.last_event_id)
            except httpx.HTTPError as error:
                self.problems.append(f"open failed: {error!r}")
                time.sleep(0.1)
                continue
            self.connections += 1
            try:
                self.statuses.append(response.status_code)
                if response.status_code != 200:
                    self.problems.append(f"status {response.status_code}: {response.read()[:300]!r}")
                    time.sleep(0.1)
                    continue
                for event in read_events(response):
                    with self.changed:
                        if event.id:
                            self.last_event_id = event.id
                        self.events.append(event)
                        self.changed.notify_all()
            finally:
                response.close()
        with self.changed:
            self.changed.notify_all()

    def wait_for(self, predicate: Callable[[list[Event]], bool], what: str, timeout: float = WAIT_S) -> None:
        """Block until predicate(events) holds; fail naming what after timeout."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate(self.events):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{self.name}: timed out waiting for {what}; problems: {self.problems}")
                self.changed.wait(left)

    def messages(self) -> list[Any]:
        """Every message event's JSON, in order (the legacy endpoint events left out)."""
        with self.changed:
            return [event.json() for event in self.events if event.event == "message" and event.data]

    def stop(self) -> None:
        """Stop reopening and drop the connection."""
        self.stopping = True
        self.http.close()
        self.thread.join(5)


class ListenStream:
    """One subscriptions/listen stream, read on a thread into a queue: its messages, then ENDED."""

    def __init__(self, response: httpx.Response, http: httpx.Client) -> None:
        self.response = response
        self.http = http
        self.items: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self) -> None:
        """Queue every message, then ENDED."""
        for event in read_events(self.response):
            self.items.put(event.json())
        self.items.put(ENDED)

    def next(self, timeout: float = WAIT_S) -> Any:
        """The next message (or ENDED), failing after timeout."""
        return self.items.get(timeout=timeout)

    def close(self) -> None:
        """Close the stream from the client's side."""
        self.response.close()
        self.http.close()

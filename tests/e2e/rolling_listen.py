"""2026-07-28 subscriptions/listen streams kept open through the rolling restart, and calls on that wire.

A listen stream is not resumable: when its worker stops it ends with its final result, and the client
opens a new one. What it misses in between is counted exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.e2e.rolling_balancer import http_client
from tests.e2e.rolling_streams import ENDED, ListenStream, read_events
from tests.e2e.rolling_work import JOIN_S, LONG_MS, SHORT_MS, InFlight, OpenWork
from tests.e2e.server_process import ServerProcess
from tests.e2e.stateless_client import stateless_headers, stateless_meta, stateless_request

__all__ = ["ListenWork"]

TAG = "io.modelcontextprotocol/subscriptionId"
# Resources the listens watch: one per tick, each touched once.
URIS = [f"test://rolling/{tick}" for tick in range(400)]


@dataclass
class Listening:
    """One client's listen, across the streams it opens: what it got, what it missed, how often it ended."""

    pin: ServerProcess
    number: int
    generation: int = 0
    listen_id: str = ""
    stream: ListenStream | None = None
    got: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    endings: int = 0


class ListenWork(OpenWork):
    """Two 2026-07-28 subscriptions/listen streams, one per host; reopened (not resumed) when one ends.

    Each touch of a resource is a notification every open listen must get exactly once. One whose stream
    ended gets its final result; the client reopens at the next touch, so the touch that raced the end and
    the one made while no stream was open are what it misses, and exactly those.
    """

    def start(self) -> None:
        self.listens = [Listening(host, number) for number, host in enumerate(self.balancer.hosts)]
        for listen in self.listens:
            self.reopen(listen)

    def reopen(self, listen: Listening) -> None:
        """Open the listen (its host first), and wait for the acknowledgment."""
        listen.generation += 1
        listen_id = f"listen-{listen.number}-{listen.generation}"
        body = stateless_request("subscriptions/listen", {"notifications": {"resourceSubscriptions": URIS}},
                              request_id=listen_id)
        http = http_client()
        response = self.balancer.send(http, "POST", "/mcp", pin=listen.pin, json=body,
                                      headers=stateless_headers(body), stream=True)
        assert response.status_code == 200, (response.status_code, response.read())
        assert response.headers["content-type"].startswith("text/event-stream"), response.read()
        listen.stream = ListenStream(response, http)
        listen.listen_id = listen_id
        ack = listen.stream.next()
        assert ack["method"] == "notifications/subscriptions/acknowledged", ack

    def pump(self, tick: int) -> None:
        uri = URIS[tick]
        body = stateless_request("tools/call", {"name": "touch_resource", "arguments": {"uri": uri}})
        answer = self.balancer.send(self.http, "POST", "/mcp", json=body, headers=stateless_headers(body))
        assert answer.status_code == 200 and "result" in answer.json(), (answer.status_code, answer.text)
        for listen in self.listens:
            if listen.stream is None:
                listen.missed.append(uri)  # made while no stream was open
                self.reopen(listen)
                continue
            listen.expected.append(uri)
            item = listen.stream.next()
            if isinstance(item, dict) and item.get("method") == "notifications/resources/updated":
                assert item["params"] == {"uri": uri, "_meta": {TAG: listen.listen_id}}, item
                listen.got.append(uri)
                continue
            # The stream's worker stopped: the final result, then the end; never an end without it.
            assert isinstance(item, dict) and item.get("id") == listen.listen_id, f"{listen.listen_id}: {item!r}"
            result = item["result"]
            assert result["resultType"] == "complete" and result["_meta"][TAG] == listen.listen_id, item
            assert listen.stream.next() is ENDED
            listen.stream.close()
            listen.stream = None
            listen.endings += 1
            listen.expected.pop()
            listen.missed.append(uri)  # raced the stream's end

    def before_stop(self, host: ServerProcess) -> None:
        for ms in (SHORT_MS, LONG_MS):
            call = InFlight(f"stateless-{ms}-{len(self.in_flight)}", ms, self.stateless_call(host, ms))
            assert call.started.wait(JOIN_S), f"{call.name} did not start"
            self.in_flight.append(call)

    def stateless_call(self, host: ServerProcess, ms: int):
        """A 2026-07-28 call that logs first, so its answer is an SSE stream on its own POST."""
        def run(call: InFlight) -> None:
            meta = stateless_meta(**{"io.modelcontextprotocol/logLevel": "info"})
            body = stateless_request("tools/call", {"name": "sleep_ms", "arguments": {"ms": ms, "announce": True}},
                                  meta=meta)
            with http_client() as http:
                read(call, http, body)

        def read(call: InFlight, http, body: dict[str, Any]) -> None:
            response = self.balancer.send(http, "POST", "/mcp", pin=host, json=body, headers=stateless_headers(body),
                                          stream=True)
            try:
                assert response.status_code == 200, (response.status_code, response.read())
                for event in read_events(response):
                    message = event.json()
                    if message.get("method") == "notifications/message":
                        call.started.set()
                    elif message.get("id") == body["id"]:
                        call.responses.append(message)
            finally:
                response.close()
        return run

    def check(self) -> None:
        super().check()
        for listen in self.listens:
            assert listen.got == listen.expected, listen.listen_id
            assert listen.endings >= 2, f"{listen.listen_id}: its host's restarts never ended it"
            # Per ending: the touch that raced it and the one made before the client reopened, nothing more.
            assert len(listen.missed) == 2 * listen.endings, listen.missed

    def summary(self) -> str:
        counts = [f"{listen.listen_id}: {len(listen.got)} received, {len(listen.missed)} missed, {listen.endings} "
                  "endings" for listen in self.listens]
        return f"{super().summary()}; " + "; ".join(counts)

    def close(self) -> None:
        for listen in self.listens:
            if listen.stream is not None:
                listen.stream.close()
        super().close()

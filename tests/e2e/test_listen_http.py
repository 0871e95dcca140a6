"""subscriptions/listen over HTTP (MCP 2026-07-28): a raw SSE client against a real gunicorn, one worker and a fleet.

Every listen stream is read on its own thread into a queue, so a test waits for events with a bounded get.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.server_process import ServerProcess
from tests.e2e.sse_client import EventParser
from tests.e2e.stateless_client import stateless_headers, stateless_request
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

PLUGINS = "tests.e2e.plugins.scale_tools,tests.e2e.plugins.feature_tools"
TAG = "io.modelcontextprotocol/subscriptionId"
WAIT_S = 20.0
KEEPALIVE = object()
ENDED = object()


def call(server: ServerProcess, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One stateless tools/call; its response (JSON, or the last event of its SSE stream)."""
    body = stateless_request("tools/call", {"name": name, "arguments": arguments})
    response = httpx.post(server.url, json=body, headers=stateless_headers(body), timeout=WAIT_S)
    if response.headers["content-type"].startswith("text/event-stream"):
        return json.loads([line for line in response.text.splitlines() if line.startswith("data:")][-1][5:])
    return response.json()


def cancelled_line(log: str, listen_id: str) -> bool:
    """Whether the server logged the listen as cancelled (it ended without an answer)."""
    return any(f"method=subscriptions/listen id={listen_id} " in line and "status=cancelled" in line
               for line in log.splitlines())


class Listen:
    """One open subscriptions/listen stream, read on a thread: events, KEEPALIVE per comment, ENDED at the end."""

    def __init__(self, server: ServerProcess, listen_id: Any, notifications: dict[str, Any]) -> None:
        self.items: queue.Queue[Any] = queue.Queue()
        self.client = httpx.Client(timeout=httpx.Timeout(WAIT_S, connect=5.0))
        body = stateless_request("subscriptions/listen", {"notifications": notifications}, request_id=listen_id)
        request = self.client.build_request("POST", server.url, json=body, headers=stateless_headers(body))
        self.response = self.client.send(request, stream=True)
        assert self.response.status_code == 200
        assert self.response.headers["content-type"].startswith("text/event-stream")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        """Queue what the stream carries until it ends or is closed."""
        parser = EventParser()
        try:
            for line in self.response.iter_lines():
                if line.startswith(":"):
                    self.items.put(KEEPALIVE)
                event = parser.feed(line)
                if event is not None:
                    self.items.put(event.json())
        except (httpx.HTTPError, RuntimeError, ValueError):
            pass
        self.items.put(ENDED)

    def next(self, skip_keepalives: bool = True) -> Any:
        """The next item, failing after WAIT_S."""
        while True:
            item = self.items.get(timeout=WAIT_S)
            if not (skip_keepalives and item is KEEPALIVE):
                return item

    def close(self) -> None:
        """Close the stream from the client's side (the specification's cancellation on HTTP)."""
        self.response.close()
        self.client.close()


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    """One worker, the in-memory store, a keepalive every second."""
    with ServerProcess(env={"MCP_PLUGINS": PLUGINS, "MCP_KEEPALIVE_S": "1"}) as running:
        yield running


def test_ack_first_then_only_what_the_filter_asked_for_each_tagged(server):
    tools = Listen(server, 41, {"toolsListChanged": True, "resourceSubscriptions": ["test://watched"]})
    prompts = Listen(server, "p", {"promptsListChanged": True})
    try:
        assert tools.next() == {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                                "params": {"_meta": {TAG: 41}, "notifications": {
                                    "toolsListChanged": True, "resourceSubscriptions": ["test://watched"]}}}
        assert prompts.next()["params"] == {"_meta": {TAG: "p"}, "notifications": {"promptsListChanged": True}}
        assert "result" in call(server, "change_registry", {"kind": "tool", "action": "add", "name": "rt-a"})
        assert "result" in call(server, "touch_resource", {"uri": "test://other"})
        assert "result" in call(server, "touch_resource", {"uri": "test://watched"})
        assert "result" in call(server, "change_registry", {"kind": "prompt", "action": "add"})
        assert tools.next() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                                "params": {"_meta": {TAG: 41}}}
        assert tools.next() == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                "params": {"uri": "test://watched", "_meta": {TAG: 41}}}
        # The prompts-only stream saw no tools event before its own.
        assert prompts.next() == {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed",
                                  "params": {"_meta": {TAG: "p"}}}
        assert tools.next(skip_keepalives=False) is KEEPALIVE
    finally:
        tools.close()
        prompts.close()


def test_closing_the_stream_cancels_the_listen(server):
    listen = Listen(server, "gone", {"toolsListChanged": True})
    assert listen.next()["method"] == "notifications/subscriptions/acknowledged"
    listen.close()
    # The server notices at its next write (a keepalive within a second) and ends the request unanswered.
    deadline = time.monotonic() + WAIT_S
    while not cancelled_line(server.read_log(), "gone"):
        assert time.monotonic() < deadline, "the listen was never cancelled"
        time.sleep(0.05)  # a plain sleep: the stream's reader is a thread


def test_sigterm_ends_a_listen_with_its_result(server):
    listen = Listen(server, 5, {"toolsListChanged": True})
    assert listen.next()["method"] == "notifications/subscriptions/acknowledged"
    os.kill(server.proc.pid, signal.SIGTERM)
    final = listen.next()
    assert final["id"] == 5 and final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"][TAG] == 5
    assert listen.next() is ENDED
    listen.close()


@pytest.mark.redis
def test_one_change_reaches_every_listen_stream_of_a_fleet_exactly_once(redis_server):  # noqa: F811
    with ServerProcess(env={"MCP_PLUGINS": PLUGINS, "MCP_REDIS_URL": redis_server.url}, workers=3) as fleet:
        pids = fleet.worker_pids()
        listens = []
        try:
            for n in range(6):
                with fleet.accepting_only(pids[n % 3]):
                    listens.append(Listen(fleet, n, {"toolsListChanged": True, "promptsListChanged": True}))
                    assert listens[-1].next()["method"] == "notifications/subscriptions/acknowledged"
            assert "result" in call(fleet, "change_registry", {"kind": "tool", "action": "add", "name": "rt-f"})
            # A second change marks the end: a duplicate of the first would arrive before it.
            assert "result" in call(fleet, "change_registry", {"kind": "prompt", "action": "add"})
            for n, listen in enumerate(listens):
                got = [listen.next(), listen.next()]
                assert [(m["method"], m["params"]["_meta"][TAG]) for m in got] == [
                    ("notifications/tools/list_changed", n), ("notifications/prompts/list_changed", n)]
        finally:
            for listen in listens:
                listen.close()

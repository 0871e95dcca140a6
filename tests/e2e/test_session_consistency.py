"""Concurrent requests on one session keep each other's changes, on a real gunicorn with each store.

100 resources/subscribe with distinct URIs and some logging/setLevel, all at once
from parallel connections: afterwards the session holds exactly the 100
subscriptions (each of them gets its notifications/resources/updated) and the level.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.e2e.raw_clients import StreamableSession, call_tool, client
from tests.e2e.raw_clients import request as rpc
from tests.e2e.server_process import ServerProcess
from tests.e2e.sse_client import iter_events
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

PLUGINS = "tests.e2e.plugins.session_tools"
SUBSCRIBES = 100
LEVEL_CHANGES = 10
CONNECTIONS = 20
UPDATED = "notifications/resources/updated"


class UpdatedUris(threading.Thread):
    """Reads a session's standalone stream in the background, keeping the URI of every resources/updated."""

    def __init__(self, session: StreamableSession) -> None:
        super().__init__(daemon=True)
        self.url = session.url
        self.headers = {"Accept": "text/event-stream", **session.headers}
        self.uris: list[str] = []
        self.status: int | None = None
        self.opened = threading.Event()
        self.stop = threading.Event()
        self.start()
        assert self.opened.wait(15) and self.status == 200, self.status

    def run(self) -> None:
        """Collect until told to stop (the server's keepalives wake the read twice a second)."""
        with client() as http, http.stream("GET", self.url, headers=self.headers) as response:
            self.status = response.status_code
            self.opened.set()
            for event in iter_events(response):
                message = event.json()
                if message.get("method") == UPDATED:
                    self.uris.append(message["params"]["uri"])
                if self.stop.is_set():
                    return

    def wait_for(self, count: int, timeout: float = 20.0) -> list[str]:
        """The URIs received once count have arrived (or the timeout passed)."""
        deadline = time.monotonic() + timeout
        while len(self.uris) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(self.uris)


def post_alone(session: StreamableSession, message: dict[str, Any]) -> dict[str, Any]:
    """POST one request on a connection of its own and return its JSON answer."""
    headers = {"Accept": "application/json", **session.headers}
    with httpx.Client(timeout=httpx.Timeout(30.0, connect=5.0)) as http:
        answer = http.post(session.url, json=message, headers=headers)
    assert answer.status_code == 200, (answer.status_code, answer.text)
    return answer.json()


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_concurrent_subscribes_and_level_changes_on_one_session_are_all_kept(backend, request):
    env = {"MCP_PLUGINS": PLUGINS, "MCP_KEEPALIVE_S": "0.5"}
    workers = 1
    if backend == "redis":
        redis = request.getfixturevalue("redis_server")
        redis.client().flushdb()
        env["MCP_REDIS_URL"] = redis.url
        workers = 2
    with ServerProcess(env=env, workers=workers) as server, client() as http:
        session = StreamableSession(http, server.url)
        assert session.call(rpc("logging/setLevel", {"level": "debug"}))["result"] == {}
        uris = [f"test://item/{n}" for n in range(SUBSCRIBES)]
        messages = [rpc("resources/subscribe", {"uri": uri}) for uri in uris]
        messages += [rpc("logging/setLevel", {"level": "error"}) for _ in range(LEVEL_CHANGES)]
        random.Random(10).shuffle(messages)
        with ThreadPoolExecutor(CONNECTIONS) as pool:
            answers = list(pool.map(lambda message: post_alone(session, message), messages))
        assert [answer.get("result") for answer in answers] == [{}] * len(messages)

        stored = session.call(call_tool("stored_session", {}))["result"]["structuredContent"]
        assert stored == {"subscriptions": sorted(uris), "logLevel": "error"}
        # Each kept subscription works: every URI gets its update, exactly once.
        updates = UpdatedUris(session)
        try:
            assert session.call(call_tool("touch_items", {"count": SUBSCRIBES}))["result"]["isError"] is False
            received = updates.wait_for(SUBSCRIBES)
        finally:
            updates.stop.set()
        assert sorted(received) == sorted(uris)


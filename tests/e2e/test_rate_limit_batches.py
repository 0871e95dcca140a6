"""MCP_RATE_LIMIT counts messages, not HTTP requests: a batch costs one per message it carries."""

from __future__ import annotations

import pytest

from tests.e2e.raw_clients import StreamableSession, call_tool, client, notification, request
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

RATE = 20
# Batches exist on this version only.
VERSION = "2025-03-26"


def add(n: int) -> dict:
    """A tools/call of add whose answer names n."""
    return call_tool("add", {"a": n, "b": 0})


def spend_the_allowance(server: ServerProcess) -> None:
    """Send batches until the limit refuses one; count exactly what passed and what was refused."""
    with client() as http:
        session = StreamableSession(http, server.url, VERSION)
        # A batch larger than the whole limit can never pass, and says so; refused, it costs nothing (2 spent).
        never = session.post([request("ping") for _ in range(RATE + 1)], accept="application/json")
        assert never.status_code == 429 and "smaller batches" in never.json()["error"]["message"]
        # 2 + 6 + 6 = 14 of 20: each batch of 6 passes, whole.
        answered = []
        for start in (0, 6):
            response = session.post(server_batch(start, 6), accept="application/json")
            assert response.status_code == 200, response.text
            answered += [int(answer["result"]["content"][0]["text"]) for answer in response.json()]
        # 7 more would make 21: refused whole, with the JSON-RPC error, and none of it runs.
        refused = session.post(server_batch(12, 7), accept="application/json")
        assert refused.status_code == 429, refused.text
        error = refused.json()["error"]
        assert error["code"] == -32600 and "MCP_RATE_LIMIT" in error["message"] and "batch of 7" in error["message"]
        assert int(refused.headers["Retry-After"]) == error["data"]["retryAfter"] >= 1
        # Exactly 6 are left: 5 calls and a notification pass, and then not one message more.
        last = session.post(server_batch(12, 5) + [notification("notifications/progress", {})],
                            accept="application/json")
        assert last.status_code == 200, last.text
        answered += [int(answer["result"]["content"][0]["text"]) for answer in last.json()]
        assert sorted(answered) == list(range(17))
        assert session.post(request("ping"), accept="application/json").status_code == 429


def server_batch(start: int, count: int) -> list[dict]:
    """count add calls answering start, start + 1, ..."""
    return [add(n) for n in range(start, start + count)]


def test_batches_are_charged_one_per_message_in_memory():
    with ServerProcess(env={"MCP_RATE_LIMIT": f"{RATE}/minute"}) as server:
        spend_the_allowance(server)


@pytest.mark.redis
def test_batches_are_charged_one_per_message_across_workers_with_redis(redis_server):  # noqa: F811
    env = {"MCP_RATE_LIMIT": f"{RATE}/minute", "MCP_REDIS_URL": redis_server.url}
    with ServerProcess(env=env, workers=2) as server:
        spend_the_allowance(server)

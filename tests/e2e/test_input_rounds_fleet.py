"""A multi round-trip request whose retry lands on another worker: every worker opens a requestState another minted.

With Redis the workers share the key through it (no MCP_REQUEST_STATE_KEY set); without Redis the gunicorn
master makes one before forking, which a worker it starts later inherits too. Each round goes to one worker
only (the others frozen with SIGSTOP).
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from typing import Any

import httpx
import pytest

from flask_mcp_gevent.config import Settings
from tests.conformance.runner import FIXTURE_PLUGINS
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

VERSION = "2026-07-28"
TOOL = "test_input_required_result_multi_round"
CAPABILITIES = {"elicitation": {}}
TIMEOUT_S = 10.0


def call(server: ServerProcess, request_id: int, **params: Any) -> dict[str, Any]:
    """POST one 2026-07-28 tools/call of the multi-round tool on a new connection; return the JSON-RPC response."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
        "name": TOOL, "arguments": {}, **params,
        "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION,
                  "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}}}
    headers = {"MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/call", "Mcp-Name": TOOL,
               "Accept": "application/json, text/event-stream"}
    response = httpx.post(server.url, json=body, headers=headers, timeout=TIMEOUT_S)
    assert response.status_code == 200, response.text
    return response.json()


def three_rounds_on_alternating_workers(server: ServerProcess) -> str:
    """Run the tool's three rounds, each on a different worker than the last; return the final text."""
    first, second = server.worker_pids()[:2]
    with server.accepting_only(first):
        one = call(server, 1)["result"]
    assert list(one["inputRequests"]) == ["step1"]
    with server.accepting_only(second):
        two = call(server, 2, inputResponses={"step1": {"action": "accept", "content": {"name": "Al"}}},
                   requestState=one["requestState"])["result"]
    assert list(two["inputRequests"]) == ["step2"], two
    with server.accepting_only(first):
        three = call(server, 3, inputResponses={"step2": {"action": "accept", "content": {"color": "red"}}},
                     requestState=two["requestState"])["result"]
    assert three["resultType"] == "complete", three
    return three["content"][0]["text"]


@pytest.mark.redis
def test_with_redis_a_retry_on_another_worker_opens_the_state(redis_server):  # noqa: F811
    redis_server.client().flushdb()
    env = {"MCP_PLUGINS": FIXTURE_PLUGINS, "MCP_REDIS_URL": redis_server.url}
    with ServerProcess(env=env, workers=2) as server:
        assert three_rounds_on_alternating_workers(server) == "Al likes red"


@pytest.mark.skipif("session_era" not in {f.name for f in dataclasses.fields(Settings)},
                    reason="needs MCP_SESSION_ERA (several workers without Redis), issue 12 item 6")
def test_without_redis_the_masters_key_opens_the_state_on_every_worker():
    env = {"MCP_PLUGINS": FIXTURE_PLUGINS, "MCP_SESSION_ERA": "0"}
    with ServerProcess(env=env, workers=2) as server:
        assert three_rounds_on_alternating_workers(server) == "Al likes red"


def test_without_redis_a_worker_started_later_opens_a_state_its_predecessor_minted():
    with ServerProcess(env={"MCP_PLUGINS": FIXTURE_PLUGINS}) as server:
        one = call(server, 1)["result"]
        (old,) = server.worker_pids()
        os.kill(old, signal.SIGKILL)
        deadline = time.monotonic() + TIMEOUT_S
        while not (set(server.worker_pids()) - {old}) and time.monotonic() < deadline:
            time.sleep(0.05)
        server.wait_ready(TIMEOUT_S)
        assert server.worker_pids() != [old]
        two = call(server, 2, inputResponses={"step1": {"action": "accept", "content": {"name": "Al"}}},
                   requestState=one["requestState"])
        assert list(two["result"]["inputRequests"]) == ["step2"], two

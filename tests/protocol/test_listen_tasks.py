"""subscriptions/listen through the server: which taskIds a stream keeps, and the request's byte bound.

A listen runs as the stateless wire runs it (`Server.handle_request` with an ephemeral session of its
principal) in a greenlet of its own; what it sends is collected, its acknowledgment first.
"""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.stateless.metadata import ephemeral_session
from mcp_tools import Registry, tool
from tests.support.tasks_client import WAIT_S, WITH_TASKS, Client, code_of
from tests.support.waiting import wait_until


@tool(input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}}, task="optional")
def sleepy(seconds: float = 0) -> str:
    """Sleep, then say so."""
    gevent.sleep(seconds)
    return f"slept {seconds}"


@pytest.fixture
def registry() -> Registry:
    """Only the tool above."""
    found = Registry()
    found.add_function(sleepy)
    return found


def listen(server, principal: str, params: dict) -> tuple[gevent.Greenlet, list[dict]]:
    """Start a subscriptions/listen of principal with these params; its greenlet and what it sent."""
    body = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {
        **params, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            "io.modelcontextprotocol/clientCapabilities": WITH_TASKS}}}
    message = parse_body(dumps(body)).messages[0]
    sent: list[dict] = []
    session = ephemeral_session(message.meta, principal)
    return gevent.spawn(server.handle_request, session, message, sent.append), sent


def test_a_listen_keeps_only_its_principals_tasks_that_have_not_ended(server):
    alice = Client(server, "alice")
    running = alice.call("sleepy", seconds=30)["taskId"]
    ended = alice.call("sleepy", seconds=0)["taskId"]
    alice.until(ended)
    mallorys = Client(server, "mallory").call("sleepy", seconds=30)["taskId"]
    greenlet, sent = listen(server, "alice", {"notifications": {"taskIds": ["nope", mallorys, ended, running]}})
    try:
        wait_until(lambda: sent, timeout=WAIT_S, what="the acknowledgment")
        assert sent[0]["params"]["notifications"] == {"taskIds": [running]}
    finally:
        greenlet.kill()


def test_a_listen_request_past_the_byte_bound_is_invalid_params_with_its_id(make_server, registry):
    server = make_server({"MCP_LISTEN_MAX_BYTES": "2048"}, registry=registry)
    greenlet, sent = listen(server, "alice", {"notifications": {"toolsListChanged": True}, "padding": "x" * 2048})
    response = greenlet.get(timeout=WAIT_S)
    assert sent == []
    assert response["id"] == "L" and code_of(response) == -32602
    assert "MCP_LISTEN_MAX_BYTES" in response["error"]["message"]
    assert len(server.listeners) == 0

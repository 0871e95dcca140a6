"""notifications/cancelled: kills only the named request of its session, never initialize; unknown ids are ignored."""

from __future__ import annotations

import logging

import gevent
import pytest
from gevent.event import Event

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.messages import parse_body
from mcp_tools import Registry, tool
from tests.protocol.conftest import Rpc

WAIT_S = 10.0
# What the blocking tool saw, by call label: "started", then "finished" or "killed".
SEEN: dict[str, list[str]] = {}
RELEASE = Event()


@tool(input_schema={"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]})
def block(label: str) -> str:
    """Block until released, noting how the call ended."""
    SEEN[label] = ["started"]
    try:
        RELEASE.wait()
    except gevent.GreenletExit:
        SEEN[label].append("killed")
        raise
    SEEN[label].append("finished")
    return f"{label} finished"


@pytest.fixture
def registry() -> Registry:
    """Only the blocking tool; every test starts with it blocked."""
    SEEN.clear()
    RELEASE.clear()
    registry = Registry()
    registry.add_function(block)
    yield registry
    RELEASE.set()


def start(rpc: Rpc, message: dict) -> gevent.Greenlet:
    """Accept one request without waiting; return its greenlet once it has started running."""
    (greenlet,), errors = rpc.server.accept(rpc.session, parse_body(dumps(message)), rpc.sent.append)
    assert errors == []
    gevent.sleep(0)
    return greenlet


def start_block(rpc: Rpc, request_id, label: str) -> gevent.Greenlet:
    """Start a blocking call under request_id and wait until the tool runs."""
    greenlet = start(rpc, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                           "params": {"name": "block", "arguments": {"label": label}}})
    with gevent.Timeout(WAIT_S):
        while label not in SEEN:
            gevent.sleep(0.001)
    return greenlet


def cancel(rpc: Rpc, request_id) -> list:
    """Send notifications/cancelled for request_id; return what came back (nothing, always)."""
    return rpc(dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": request_id, "reason": "user pressed stop"}}))


def release_and_join(*greenlets: gevent.Greenlet) -> None:
    """Let blocked calls finish and wait for every greenlet."""
    RELEASE.set()
    gevent.joinall(greenlets, timeout=WAIT_S)
    assert all(g.dead for g in greenlets)


def test_a_cancelled_call_is_killed_and_gets_no_response(make_rpc, mcp_log):
    mcp_log.set_level(logging.INFO, logger="mcp.rpc")
    rpc = make_rpc("2025-06-18")
    call = start_block(rpc, 42, "a")
    assert cancel(rpc, 42) == []
    call.join(timeout=WAIT_S)
    assert call.dead and call.value is None
    assert SEEN["a"] == ["started", "killed"]
    assert rpc.sent == []
    assert "rpc method=tools/call id=42 " in mcp_log.text
    assert "status=cancelled" in mcp_log.text


def test_only_the_named_request_is_cancelled(make_rpc):
    rpc = make_rpc("2025-06-18")
    kept, killed = start_block(rpc, 1, "kept"), start_block(rpc, "two", "killed")
    cancel(rpc, "two")
    killed.join(timeout=WAIT_S)
    release_and_join(kept)
    assert SEEN == {"kept": ["started", "finished"], "killed": ["started", "killed"]}
    assert kept.value["result"]["content"] == [{"type": "text", "text": "kept finished"}]


def test_an_id_of_another_type_does_not_match(make_rpc):
    rpc = make_rpc("2025-06-18")
    call = start_block(rpc, 5, "numeric")
    cancel(rpc, "5")
    release_and_join(call)
    assert SEEN["numeric"] == ["started", "finished"]


@pytest.mark.parametrize("request_id", [404, "nobody", 0])
def test_cancelling_an_unknown_id_is_ignored(make_rpc, request_id):
    rpc = make_rpc("2025-06-18")
    call = start_block(rpc, 1, "running")
    assert cancel(rpc, request_id) == []
    release_and_join(call)
    assert call.value["result"]["isError"] is False
    assert rpc.request("ping", request_id=2) == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_cancelling_a_finished_request_is_ignored(make_rpc):
    rpc = make_rpc("2025-06-18")
    RELEASE.set()
    assert rpc.request("tools/call", {"name": "block", "arguments": {"label": "done"}}, request_id=3)["result"]
    assert cancel(rpc, 3) == []
    assert rpc.request("ping", request_id=4)["result"] == {}


def test_a_session_cannot_cancel_another_sessions_request(make_rpc):
    owner, stranger = make_rpc("2025-06-18"), make_rpc("2025-06-18")
    call = start_block(owner, 7, "owned")
    cancel(stranger, 7)
    release_and_join(call)
    assert SEEN["owned"] == ["started", "finished"]


def test_initialize_cannot_be_cancelled(server):
    rpc = Rpc(server, server.open_session("sse"))
    message = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}}
    (greenlet,), _ = server.accept(rpc.session, parse_body(dumps(message)), rpc.sent.append)
    # The cancellation arrives before initialize has even run.
    assert cancel(rpc, "init") == []
    greenlet.join(timeout=WAIT_S)
    assert greenlet.value["result"]["protocolVersion"] == "2025-06-18"
    assert rpc.session.negotiated


def test_a_cancel_without_a_request_id_is_ignored(make_rpc):
    rpc = make_rpc("2025-06-18")
    call = start_block(rpc, 1, "running")
    assert rpc('{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "no id"}}') == []
    release_and_join(call)
    assert SEEN["running"] == ["started", "finished"]


# Streamable HTTP: a call of a tool without ctx runs in its POST's own greenlet (nothing can come before its result)
@pytest.fixture
def block_app():
    """A host app serving only the blocking tool (no ctx), on its MCP path."""
    from flask import Flask

    from flask_mcp_gevent import MCP

    SEEN.clear()
    RELEASE.clear()
    app = Flask(__name__)
    mcp = MCP(app)
    mcp.tool(block)
    yield app
    RELEASE.set()
    app.extensions["mcp"].shutdown()


def streamable_session(client) -> dict[str, str]:
    """Initialize a Streamable HTTP session; the headers its later POSTs send."""
    response = client.post("/mcp", headers={"Accept": "application/json, text/event-stream"}, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    headers = {"Accept": "application/json, text/event-stream", "Mcp-Session-Id": response.headers["Mcp-Session-Id"],
               "MCP-Protocol-Version": "2025-11-25"}
    client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


def test_a_streamable_call_of_a_tool_without_ctx_runs_in_its_posts_own_greenlet(block_app, monkeypatch):
    client = block_app.test_client()
    headers = streamable_session(client)
    server = block_app.extensions["mcp"].server
    monkeypatch.setattr(server, "start_request", lambda *args, **kwargs: pytest.fail("a greenlet was spawned"))
    RELEASE.set()
    response = client.post("/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "block", "arguments": {"label": "a"}}})
    assert response.mimetype == "application/json"
    assert response.get_json()["result"]["content"][0]["text"] == "a finished"


def test_a_streamable_call_run_in_its_post_is_cancelled_by_another_post(block_app):
    client = block_app.test_client()
    headers = streamable_session(client)
    post = gevent.spawn(client.post, "/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "block", "arguments": {"label": "b"}}})
    with gevent.Timeout(WAIT_S):
        while "b" not in SEEN:
            gevent.sleep(0.001)
    cancelled = block_app.test_client().post("/mcp", headers=headers, json={
        "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "test"}})
    assert cancelled.status_code == 202
    response = post.get(timeout=WAIT_S)
    # No answer, as the cancellation rules say: an event stream that ends without one.
    assert SEEN["b"] == ["started", "killed"]
    assert response.mimetype == "text/event-stream" and b'"id"' not in response.get_data()
    # The session and its next call are fine.
    RELEASE.set()
    again = client.post("/mcp", headers=headers, json={
        "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "block", "arguments": {"label": "c"}}})
    assert again.get_json()["result"]["content"][0]["text"] == "c finished"

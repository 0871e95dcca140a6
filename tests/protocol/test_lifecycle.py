"""The session lifecycle: nothing but initialize and ping before initialize, then initialized."""

from __future__ import annotations

import pytest

from mcp_tools import Registry, tool


@pytest.mark.parametrize(
    "method, params",
    [
        ("tools/list", "{}"),
        ("tools/call", '{"name": "echo", "arguments": {"text": "hi"}}'),
        ("server/discover", "{}"),
    ],
)
def test_requests_before_initialize_get_a_clear_error(rpc, method, params):
    response = rpc.one(f'{{"jsonrpc": "2.0", "id": 3, "method": "{method}", "params": {params}}}')
    assert response["id"] == 3
    assert response["error"]["code"] == -32600
    assert "initialize" in response["error"]["message"]
    assert "result" not in response


def test_tools_are_not_run_before_initialize(make_server, make_rpc):
    calls: list[str] = []

    @tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def record() -> str:
        """Note that the tool ran."""
        calls.append("ran")
        return "ran"

    registry = Registry()
    registry.add_function(record)
    rpc = make_rpc(on=make_server(registry=registry))
    response = rpc.request("tools/call", {"name": "record", "arguments": {}})
    assert response["error"]["code"] == -32600
    assert calls == []


def test_requests_work_after_initialize_even_before_initialized_notification(rpc):
    rpc.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert "result" in rpc.request("tools/list", {}, request_id=2)


def test_initialized_notification_marks_the_session_ready_and_gets_no_answer(rpc):
    rpc.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert not rpc.session.initialized
    assert rpc('{"jsonrpc": "2.0", "method": "notifications/initialized"}') == []
    assert rpc.session.initialized


def test_initialized_notification_before_initialize_changes_nothing(rpc):
    assert rpc('{"jsonrpc": "2.0", "method": "notifications/initialized"}') == []
    assert not rpc.session.initialized
    assert not rpc.session.negotiated

"""Client notifications: never answered, and a request sent without an id never runs."""

from __future__ import annotations

import gevent
import pytest
from gevent.event import Event

from flask_mcp_gevent.messages import parse_body
from mcp_tools import Registry, tool

OBJECT = {"type": "object", "properties": {}, "additionalProperties": False}


@pytest.mark.parametrize(
    "body",
    [
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        '{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}',
        '{"jsonrpc": "2.0", "method": "notifications/no_such_thing", "params": {"x": 1}}',
        '{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 404}}',
        '{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}',
    ],
)
def test_notifications_produce_no_response(make_rpc, body):
    rpc = make_rpc("2025-06-18")
    assert rpc(body) == []
    assert rpc.sent == []


def test_notifications_before_initialize_produce_no_response(rpc):
    assert rpc('{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}') == []


def recording_registry(calls: list[str]) -> Registry:
    """A registry whose one tool records each call."""

    @tool(input_schema=OBJECT)
    def record() -> str:
        """Note that the tool ran."""
        calls.append("ran")
        return "ran"

    registry = Registry()
    registry.add_function(record)
    return registry


def test_a_tool_call_sent_as_a_notification_does_not_run_the_tool(make_server, make_rpc):
    calls: list[str] = []
    rpc = make_rpc(on=make_server(registry=recording_registry(calls)))
    assert rpc('{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "record", "arguments": {}}}') == []
    assert calls == []


def test_initialize_sent_as_a_notification_does_not_negotiate(rpc):
    assert rpc('{"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}') == []
    assert not rpc.session.negotiated


def test_cancelled_notification_stops_the_running_request(make_server):
    release = Event()
    finished: list[str] = []

    @tool(input_schema=OBJECT)
    def wait_forever() -> str:
        """Block until released."""
        release.wait()
        finished.append("done")
        return "done"

    registry = Registry()
    registry.add_function(wait_forever)
    server = make_server(registry=registry)
    session = server.open_session("sse")
    init = b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}'
    server.accept(session, parse_body(init), lambda message: None)[0][0].join(timeout=10)
    (running,), _ = server.accept(
        session,
        parse_body(b'{"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "wait_forever"}}'),
        lambda message: None,
    )
    gevent.sleep(0)  # let the call start and block
    assert not running.dead
    greenlets, errors = server.accept(
        session,
        parse_body(b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42}}'),
        lambda message: None,
    )
    assert (greenlets, errors) == ([], [])
    running.join(timeout=10)
    assert running.dead
    release.set()
    gevent.sleep(0)
    assert finished == []
    # A cancelled request gets no answer.
    assert not isinstance(running.value, dict)

"""Dispatcher's authorization hooks with an Authorizer: tools/list filters, tools/call answers -32001."""

from __future__ import annotations

from typing import Any

import gevent
import pytest

from flask_mcp_gevent.auth.permissions import Authorizer, Grants
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.dispatcher import Dispatcher
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.errors import PERMISSION_DENIED
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.session import STREAMABLE


def call(dispatcher: Dispatcher, session, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Send one request through the dispatcher and return its response."""
    body = parse_body(dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}))
    greenlets, errors = dispatcher.accept(session, body, lambda message: None)
    assert not errors, errors
    gevent.joinall(greenlets, timeout=10)
    return greenlets[0].value


@pytest.fixture
def dispatcher():
    """A dispatcher whose authorizer lets alice use echo and get_* only."""
    dispatcher = Dispatcher(Settings.from_environ({}),
                      authorizer=Authorizer({"alice": Grants(tools=("echo", "get_*")), "root": Grants(tools=("*",))}))
    yield dispatcher
    dispatcher.shutdown()


def open_initialized(dispatcher: Dispatcher, principal: str | None):
    """A session of principal that has answered initialize."""
    session = dispatcher.open_session(STREAMABLE, principal)
    result = call(dispatcher, session, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                 "clientInfo": {"name": "t", "version": "0"}})
    assert "result" in result
    return session


def test_tools_list_shows_only_the_permitted_tools(dispatcher):
    alice = open_initialized(dispatcher, "alice")
    names = {t["name"] for t in call(dispatcher, alice, "tools/list")["result"]["tools"]}
    assert names == {"echo", "get_time"}
    root = open_initialized(dispatcher, "root")
    everything = {t["name"] for t in call(dispatcher, root, "tools/list")["result"]["tools"]}
    assert {"add", "echo", "get_time"} <= everything


def test_calling_a_tool_outside_the_grants_is_permission_denied_with_its_name(dispatcher):
    session = open_initialized(dispatcher, "alice")
    denied = call(dispatcher, session, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert denied["error"]["code"] == PERMISSION_DENIED
    assert denied["error"]["data"] == {"tool": "add"}
    allowed = call(dispatcher, session, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert allowed["result"]["isError"] is False


def test_a_principal_unknown_to_the_authorizer_may_use_nothing(dispatcher):
    session = open_initialized(dispatcher, "stranger")
    assert call(dispatcher, session, "tools/list")["result"]["tools"] == []
    assert call(dispatcher, session, "tools/call", {"name": "echo", "arguments": {"text": "x"}})["error"]["code"] == (
        PERMISSION_DENIED)


def test_without_an_authorizer_every_session_may_use_everything():
    dispatcher = Dispatcher(Settings.from_environ({}))
    try:
        session = open_initialized(dispatcher, None)
        assert dispatcher.permits(session, "tool", "add")
        assert dispatcher.permits(session, "resource", "file:///anything")
        assert dispatcher.permits(session, "prompt", "anything")
    finally:
        dispatcher.shutdown()


def test_resources_and_prompts_are_checked_by_their_own_patterns():
    dispatcher = Dispatcher(Settings.from_environ({}),
                      authorizer=Authorizer({"bob": Grants(resources=("mem://public/*",), prompts=("greet",))}))
    try:
        session = dispatcher.open_session(STREAMABLE, "bob")
        assert dispatcher.permits(session, "resource", "mem://public/a")
        assert not dispatcher.permits(session, "resource", "mem://private/a")
        assert dispatcher.permits(session, "prompt", "greet")
        assert not dispatcher.permits(session, "tool", "greet")
    finally:
        dispatcher.shutdown()

"""Dispatcher's authorization hooks with an Authorizer: tools/list filters, tools/call answers -32001."""

from __future__ import annotations

from typing import Any

import gevent
import pytest

from mcp_server.auth.permissions import Authorizer, Grants
from mcp_server.config import Settings
from mcp_server.dispatcher import Dispatcher
from mcp_server.encoding import dumps
from mcp_server.errors import PERMISSION_DENIED
from mcp_server.messages import parse_body
from mcp_server.session import STREAMABLE


def call(core: Dispatcher, session, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Send one request through the core and return its response."""
    body = parse_body(dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}))
    greenlets, errors = core.accept(session, body, lambda message: None)
    assert not errors, errors
    gevent.joinall(greenlets, timeout=10)
    return greenlets[0].value


@pytest.fixture
def core():
    """A core whose authorizer lets alice use echo and get_* only."""
    core = Dispatcher(Settings.from_environ({}),
                      authorizer=Authorizer({"alice": Grants(tools=("echo", "get_*")), "root": Grants(tools=("*",))}))
    yield core
    core.shutdown()


def open_initialized(core: Dispatcher, principal: str | None):
    """A session of principal that has answered initialize."""
    session = core.open_session(STREAMABLE, principal)
    result = call(core, session, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                 "clientInfo": {"name": "t", "version": "0"}})
    assert "result" in result
    return session


def test_tools_list_shows_only_the_permitted_tools(core):
    names = {t["name"] for t in call(core, open_initialized(core, "alice"), "tools/list")["result"]["tools"]}
    assert names == {"echo", "get_time"}
    everything = {t["name"] for t in call(core, open_initialized(core, "root"), "tools/list")["result"]["tools"]}
    assert {"add", "echo", "get_time"} <= everything


def test_calling_a_tool_outside_the_grants_is_permission_denied_with_its_name(core):
    session = open_initialized(core, "alice")
    denied = call(core, session, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert denied["error"]["code"] == PERMISSION_DENIED
    assert denied["error"]["data"] == {"tool": "add"}
    allowed = call(core, session, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert allowed["result"]["isError"] is False


def test_a_principal_unknown_to_the_authorizer_may_use_nothing(core):
    session = open_initialized(core, "stranger")
    assert call(core, session, "tools/list")["result"]["tools"] == []
    assert call(core, session, "tools/call", {"name": "echo", "arguments": {"text": "x"}})["error"]["code"] == (
        PERMISSION_DENIED)


def test_without_an_authorizer_every_session_may_use_everything():
    core = Dispatcher(Settings.from_environ({}))
    try:
        session = open_initialized(core, None)
        assert core.permits(session, "tool", "add")
        assert core.permits(session, "resource", "file:///anything")
        assert core.permits(session, "prompt", "anything")
    finally:
        core.shutdown()


def test_resources_and_prompts_are_checked_by_their_own_patterns():
    core = Dispatcher(Settings.from_environ({}),
                      authorizer=Authorizer({"bob": Grants(resources=("mem://public/*",), prompts=("greet",))}))
    try:
        session = core.open_session(STREAMABLE, "bob")
        assert core.permits(session, "resource", "mem://public/a")
        assert not core.permits(session, "resource", "mem://private/a")
        assert core.permits(session, "prompt", "greet")
        assert not core.permits(session, "tool", "greet")
    finally:
        core.shutdown()

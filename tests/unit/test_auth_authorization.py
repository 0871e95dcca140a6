"""Each request is authorized by its own caller's grants: tools/list filters, tools/call answers -32001."""

from __future__ import annotations

from typing import Any

import gevent
import pytest

from flask_mcp_gevent.auth.permissions import Grants
from flask_mcp_gevent.auth.principal import API_KEY, Principal
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.errors import PERMISSION_DENIED
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.session import STREAMABLE
from mcp_tools import Registry, tool

ALICE = Principal("alice", Grants(tools=("echo", "get_*")), API_KEY)
ROOT = Principal("root", Grants(tools=("*",)), API_KEY)
NOBODY = Principal("stranger", Grants(), API_KEY)


def call(server: Server, session, method: str, params: dict[str, Any] | None = None,
         caller: Principal | None = None) -> dict[str, Any]:
    """Send one request through the server as caller and return its response."""
    body = parse_body(dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}))
    greenlets, errors = server.accept(session, body, lambda message: None, caller=caller)
    assert not errors, errors
    gevent.joinall(greenlets, timeout=10)
    return greenlets[0].value


@pytest.fixture
def server():
    """A server serving the template's tools."""
    server = Server(Settings.from_environ({}))
    yield server
    server.shutdown()


def open_initialized(server: Server, caller: Principal | None):
    """A session of caller's principal that has answered initialize."""
    session = server.open_session(STREAMABLE, caller.name if caller else None)
    result = call(server, session, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                  "clientInfo": {"name": "t", "version": "0"}}, caller)
    assert "result" in result
    return session


def test_tools_list_shows_only_the_permitted_tools(server):
    alice = open_initialized(server, ALICE)
    names = {t["name"] for t in call(server, alice, "tools/list", caller=ALICE)["result"]["tools"]}
    assert names == {"echo", "get_time"}
    root = open_initialized(server, ROOT)
    everything = {t["name"] for t in call(server, root, "tools/list", caller=ROOT)["result"]["tools"]}
    assert {"add", "echo", "get_time"} <= everything


def test_calling_a_tool_outside_the_grants_is_permission_denied_with_its_name(server):
    session = open_initialized(server, ALICE)
    denied = call(server, session, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, ALICE)
    assert denied["error"]["code"] == PERMISSION_DENIED
    assert denied["error"]["data"] == {"tool": "add"}
    allowed = call(server, session, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}, ALICE)
    assert allowed["result"]["isError"] is False


def test_a_caller_granted_nothing_may_use_nothing(server):
    session = open_initialized(server, NOBODY)
    assert call(server, session, "tools/list", caller=NOBODY)["result"]["tools"] == []
    refused = call(server, session, "tools/call", {"name": "echo", "arguments": {"text": "x"}}, NOBODY)
    assert refused["error"]["code"] == PERMISSION_DENIED


def test_without_a_caller_every_request_may_use_everything(server):
    session = open_initialized(server, None)
    assert call(server, session, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})["result"][
        "structuredContent"] == {"result": 3}


def test_the_same_principal_s_requests_each_use_their_own_credential_s_grants():
    """A read-only credential's slow call is not lifted by a full-power one of the same principal sent meanwhile."""
    started, release = gevent.event.Event(), gevent.event.Event()
    seen: list[bool] = []

    @tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def slow_check(ctx) -> str:
        """Wait, then report whether this call may delete."""
        started.set()
        release.wait(5)
        seen.append(ctx.permits("tool", "delete_note"))
        return "done"

    registry = Registry()
    registry.add_function(slow_check)
    server = Server(Settings.from_environ({}), registry=registry)
    read_only = Principal("alice", Grants(tools=("slow_check",)), API_KEY)
    full_power = Principal("alice", Grants(tools=("*",)), API_KEY)
    try:
        session = open_initialized(server, read_only)
        body = parse_body(dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                 "params": {"name": "slow_check", "arguments": {}}}))
        running, _ = server.accept(session, body, lambda message: None, caller=read_only)
        assert started.wait(5)
        assert call(server, session, "tools/list", caller=full_power)["result"]["tools"]
        release.set()
        gevent.joinall(running, timeout=5)
        assert seen == [False]
        assert call(server, session, "tools/call", {"name": "slow_check", "arguments": {}}, NOBODY)[
            "error"]["code"] == PERMISSION_DENIED
    finally:
        release.set()
        server.shutdown()


def test_resources_and_prompts_are_checked_by_their_own_patterns():
    bob = Principal("bob", Grants(resources=("mem://public/*",), prompts=("greet",)), API_KEY)
    assert bob.allows("resource", "mem://public/a")
    assert not bob.allows("resource", "mem://private/a")
    assert bob.allows("prompt", "greet")
    assert not bob.allows("tool", "greet")

"""The instructions initialize and server/discover send: derived from the registry unless MCP_INSTRUCTIONS is set."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.auth.principal import Principal, name_of
from flask_mcp_gevent.stateless import metadata
from flask_mcp_gevent.stateless.metadata import ephemeral_session
from mcp_tools import Registry, tool
from tests.protocol.conftest import Rpc, caller

STATELESS_META = {metadata.PROTOCOL_VERSION: "2026-07-28", metadata.CLIENT_CAPABILITIES: {}}


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def multiply() -> int:
    """Multiply two numbers."""
    return 0


@pytest.fixture
def registry() -> Registry:
    """The shipped tools plus a template user's own."""
    registry = Registry.discover()
    registry.add_function(multiply)
    return registry


def initialize_instructions(rpc: Rpc) -> str | None:
    """The instructions of an initialize result, None when it has none."""
    return rpc.initialize("2025-11-25").get("instructions")


def discover_instructions(rpc: Rpc) -> str | None:
    """The instructions of a server/discover result, None when it has none."""
    return rpc.request("server/discover", {"_meta": STATELESS_META})["result"].get("instructions")


def stateless_client(server, principal: Principal | None = None) -> Rpc:
    """A client of server on the 2026-07-28 wire, as principal."""
    return Rpc(server, ephemeral_session(STATELESS_META, name_of(principal)), principal)


def test_initialize_and_discover_name_a_tool_added_to_the_registry(server, make_rpc):
    for instructions in (initialize_instructions(make_rpc()), discover_instructions(stateless_client(server))):
        assert "multiply (Multiply two numbers)" in instructions
        assert "echo (Return the text unchanged)" in instructions


def test_mcp_instructions_replaces_the_derived_line(make_server, registry):
    server = make_server({"MCP_INSTRUCTIONS": "Use multiply."}, registry=registry)
    assert initialize_instructions(Rpc(server, server.open_session("sse"))) == "Use multiply."
    assert discover_instructions(stateless_client(server)) == "Use multiply."


def test_an_empty_mcp_instructions_leaves_them_out(make_server, registry):
    server = make_server({"MCP_INSTRUCTIONS": ""}, registry=registry)
    assert initialize_instructions(Rpc(server, server.open_session("sse"))) is None
    assert discover_instructions(stateless_client(server)) is None


def test_a_principal_is_told_only_of_the_tools_it_may_call(make_server, registry):
    server = make_server(registry=registry)
    alice = caller("alice", tools=("echo",))
    expected = "Tools: echo (Return the text unchanged)."
    assert initialize_instructions(Rpc(server, server.open_session("streamable", "alice"), alice)) == expected
    assert discover_instructions(stateless_client(server, alice)) == expected

"""The protocol layer never reaches back: handlers and tools see only their RequestContext, the store no protocol."""

from __future__ import annotations

import dataclasses
import pathlib
import re

import jsonrpcserver.methods
import pytest

from flask_mcp_gevent import metrics
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.messages import Message, parse_body
from flask_mcp_gevent.protocol import methods
from flask_mcp_gevent.protocol.request_context import RequestContext
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.session import STATELESS, Session
from flask_mcp_gevent.stateless.methods import STATELESS_METHODS
from flask_mcp_gevent.store import EventLog, FleetBus, SessionStore
from mcp_tools import Context

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Where the code that handlers and tools run lives: none of it may reach the server past ctx.
CONTEXT_USERS = [ROOT / "flask_mcp_gevent" / "protocol", ROOT / "mcp_tools", ROOT / "tests" / "e2e" / "plugins"]


def python_files() -> list[pathlib.Path]:
    """Every Python file of the protocol layer, the tools and the test plugins."""
    return sorted(path for folder in CONTEXT_USERS for path in folder.rglob("*.py"))


@pytest.mark.parametrize("path", python_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_handler_or_tool_reaches_the_server_through_ctx(path):
    assert not re.findall(r"\bctx\.server\b|\.server\.", path.read_text())


def test_the_request_context_holds_no_server():
    fields = {field.name: field.type for field in dataclasses.fields(RequestContext)}
    assert "server" not in fields
    assert not any("Server" in str(kind) for kind in fields.values())


def test_the_context_tools_see_is_what_the_request_context_offers():
    promised = {name for name in dir(Context) if not name.startswith("_")} | set(Context.__annotations__)
    assert {"registry", "settings", "principal", "session_id", "resource_updated", "sample"} <= promised
    missing = [name for name in promised if not hasattr(RequestContext, name)
               and name not in {field.name for field in dataclasses.fields(RequestContext)}]
    assert missing == []


def test_the_store_neither_speaks_json_rpc_nor_calls_back():
    for name in ("ports.py", "memory.py", "redis.py", "redis_events.py", "redis_fleet.py", "redis_sessions.py"):
        source = (ROOT / "flask_mcp_gevent" / "store" / name).read_text()
        assert "flask_mcp_gevent.errors" not in source and "jsonrpc" not in source, name
    for port in (SessionStore, EventLog, FleetBus):
        for gone in ("request", "broadcast", "on_broadcast", "streaming_session_ids"):
            assert not hasattr(port, gone), (port, gone)


def test_handlers_are_dispatched_from_the_explicit_method_table_only():
    assert jsonrpcserver.methods.global_methods == {}
    assert set(methods.SESSION_METHODS) >= {"initialize", "ping", "tools/list", "tools/call", "resources/read",
                                    "prompts/get", "completion/complete", "notifications/initialized"}
    server = Server(Settings.from_environ({}))
    try:
        # Each era finds only its own table's methods: ping is legacy-only, subscriptions/listen stateless-only.
        legacy = Session(transport="streamable", protocol_version="2025-11-25", initialized=True)
        stateless = Session(transport=STATELESS, protocol_version="2026-07-28", client_capabilities={},
                         initialized=True)
        assert server.handle_request(legacy, request("ping"), None)["result"] == {}
        assert server.handle_request(legacy, request("subscriptions/listen"), None)["error"]["code"] == -32601
        assert server.handle_request(stateless, request("ping"), None)["error"]["code"] == -32601
        discovered = server.handle_request(stateless, request("server/discover"), None)
        assert discovered["result"]["resultType"] == "complete"
    finally:
        server.store.events.shutdown()


def request(method: str) -> Message:
    """One request for method, with no params, as messages.py classifies it."""
    return parse_body(dumps({"jsonrpc": "2.0", "id": 5, "method": method})).messages[0]


def test_metrics_label_exactly_the_methods_of_the_table():
    server = Server(Settings.from_environ({}))
    try:
        known = frozenset(methods.SESSION_METHODS) | frozenset(STATELESS_METHODS)
        assert metrics.instruments().known_methods == known
    finally:
        server.shutdown()


def test_capabilities_and_server_info_live_beside_initialize():
    assert methods.server_info(Settings.from_environ({"MCP_SERVER_NAME": "x"})) == {
        "name": "x", "version": methods.SERVER_VERSION}
    assert "completions" in methods.server_capabilities("2025-06-18")
    assert "completions" not in methods.server_capabilities("2024-11-05")
    assert not hasattr(Server, "capabilities") and not hasattr(Server, "server_info")


def test_the_flask_extension_keeps_its_authenticator_on_its_pipeline():
    from app import create_app

    app = create_app({"MCP_API_KEYS_FILE": str(ROOT / "config" / "api_keys.example.json")})
    try:
        extension = app.extensions["mcp"]
        assert extension.authenticator is not None and extension.pipeline.authenticator is extension.authenticator
        assert not [key for key in app.extensions if key.startswith("mcp") and key != "mcp"]
    finally:
        app.extensions["mcp"].server.shutdown()

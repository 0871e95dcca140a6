"""The 2026-07-28 method table and result decoration, through the server (no HTTP)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from flask_mcp_gevent.protocol.methods import SESSION_METHODS as METHODS
from flask_mcp_gevent.stateless import metadata
from flask_mcp_gevent.stateless.metadata import ephemeral_session
from flask_mcp_gevent.stateless.methods import STATELESS_METHODS
from mcp_tools import Registry, tool
from tests.protocol.conftest import Rpc

STATELESS_META = {metadata.PROTOCOL_VERSION: "2026-07-28", metadata.CLIENT_CAPABILITIES: {}}
REMOVED = ("initialize", "notifications/initialized", "ping", "logging/setLevel", "resources/subscribe",
           "resources/unsubscribe", "notifications/roots/list_changed")


@pytest.fixture
def stateless(server) -> Rpc:
    """A client of server on the stateless wire: every request runs in an ephemeral session."""
    return Rpc(server, ephemeral_session(STATELESS_META, None))


def call(client: Rpc, method: str, params: dict[str, Any] | None = None, extra_meta: dict | None = None) -> dict:
    """Send one stateless request with the required _meta."""
    return client.request(method, {**(params or {}), "_meta": {**STATELESS_META, **(extra_meta or {})}})


def test_stateless_table_is_the_legacy_one_without_the_removed_methods_plus_discover_listen_and_tasks():
    assert set(STATELESS_METHODS) == (set(METHODS) - set(REMOVED)) | {
        "server/discover", "subscriptions/listen", "tasks/get", "tasks/update", "tasks/cancel"}


def test_discover_lists_versions_capabilities_identity_and_cache_hints(stateless):
    result = call(stateless, "server/discover")["result"]
    assert result["resultType"] == "complete"
    assert "2026-07-28" in result["supportedVersions"]
    assert {"tools", "resources", "prompts"} <= set(result["capabilities"])
    assert result["_meta"][metadata.SERVER_INFO]["name"]
    assert result["ttlMs"] >= 0 and result["cacheScope"] == "public"


@pytest.mark.parametrize("method", ["tools/list", "prompts/list", "resources/list", "resources/templates/list"])
def test_cacheable_lists_carry_result_type_server_info_and_hints(stateless, method):
    result = call(stateless, method)["result"]
    assert result["resultType"] == "complete"
    assert metadata.SERVER_INFO in result["_meta"]
    assert set(result) >= {"ttlMs", "cacheScope"}


def test_tool_call_result_has_result_type_and_no_cache_hints(stateless):
    result = call(stateless, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})["result"]
    assert result["resultType"] == "complete"
    assert "ttlMs" not in result


def test_tools_list_is_sorted_by_name_on_the_stateless_wire(stateless):
    names = [tool["name"] for tool in call(stateless, "tools/list")["result"]["tools"]]
    assert names == sorted(names)


def test_resource_not_found_is_invalid_params_with_the_uri(stateless):
    error = call(stateless, "resources/read", {"uri": "test://nowhere"})["error"]
    assert error["code"] == -32602
    assert error["data"]["uri"] == "test://nowhere"


def test_resource_not_found_stays_32002_on_the_legacy_wire(make_rpc):
    error = make_rpc("2025-11-25").request("resources/read", {"uri": "test://nowhere"})["error"]
    assert error["code"] == -32002


@pytest.mark.parametrize("method", ["ping", "initialize", "logging/setLevel", "resources/subscribe"])
def test_removed_methods_are_not_found(stateless, method):
    assert call(stateless, method, {"uri": "x", "level": "info", "protocolVersion": "x"})["error"]["code"] == -32601


def test_listen_with_a_malformed_filter_is_invalid_params(stateless):
    assert call(stateless, "subscriptions/listen", {"notifications": {"toolsListChanged": "yes"}})["error"]["code"] \
        == -32602


def test_logging_needs_a_log_level_in_meta(stateless, server):
    call(stateless, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert not [m for m in stateless.sent if m.get("method") == "notifications/message"]


def test_unknown_log_level_is_invalid_params(server):
    client = Rpc(server, ephemeral_session({**STATELESS_META, metadata.LOG_LEVEL: "loud"}, None))
    assert call(client, "tools/list", extra_meta={metadata.LOG_LEVEL: "loud"})["error"]["code"] == -32602


def test_requests_log_one_line_with_status_ok(stateless, mcp_log):
    mcp_log.set_level(logging.INFO, logger="mcp.rpc")
    call(stateless, "server/discover")
    assert "rpc method=server/discover id=1 session=- status=ok " in mcp_log.text


def test_a_tool_with_a_bad_x_mcp_header_is_refused_when_the_server_starts(make_server):
    @tool(input_schema={"type": "object", "properties": {
        "ratio": {"type": "number", "x-mcp-header": "Ratio", "description": "number is not allowed"}}})
    def bad_header(ratio: float = 0.0) -> str:
        """Mirror a number in a header, which 2026-07-28 forbids."""
        return str(ratio)

    registry = Registry()
    registry.add_function(bad_header)
    with pytest.raises(ValueError, match="bad_header"):
        make_server(registry=registry)

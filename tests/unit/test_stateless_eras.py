"""stateless.metadata: which requests take the 2026-07-28 wire, on HTTP per request and on stdio per connection."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.stateless.metadata import (
    HANDSHAKE_VERSIONS,
    STATELESS_VERSIONS,
    SUPPORTED_VERSIONS,
    Era,
    StdioEra,
    http_era,
    is_stateless_version,
)

META = "io.modelcontextprotocol/protocolVersion"


def request(method="tools/list", version=None, request_id=1):
    """A JSON-RPC request, with a stateless _meta when version is given."""
    params = {"_meta": {META: version, "io.modelcontextprotocol/clientCapabilities": {}}} if version else {}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def test_the_supported_list_names_every_era_newest_first():
    assert STATELESS_VERSIONS == ("2026-07-28",)
    assert SUPPORTED_VERSIONS == ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
    assert set(HANDSHAKE_VERSIONS) < set(SUPPORTED_VERSIONS)
    assert is_stateless_version("2026-07-28") and not is_stateless_version("2025-11-25") and not is_stateless_version(1)


@pytest.mark.parametrize("header", ["2026-07-28", "v999.0.0", "2030-01-01"])
def test_a_post_with_a_non_handshake_version_header_is_stateless(header):
    assert http_era("POST", {"MCP-Protocol-Version": header}, request()) is Era.STATELESS


@pytest.mark.parametrize("header", HANDSHAKE_VERSIONS)
def test_a_post_with_a_handshake_version_header_is_legacy_even_with_stateless_meta(header):
    assert http_era("POST", {"mcp-protocol-version": header}, request(version="2026-07-28")) is Era.SESSION


def test_without_the_header_the_body_meta_decides():
    assert http_era("POST", {}, request(version="2026-07-28")) is Era.STATELESS
    assert http_era("POST", {}, request(version="1900-01-01")) is Era.STATELESS
    assert http_era("POST", {}, request(version="2025-11-25")) is Era.SESSION
    assert http_era("POST", {"MCP-Protocol-Version": "  "}, request(version="2026-07-28")) is Era.STATELESS


@pytest.mark.parametrize("body", [request(), request("initialize"), [request()], "junk", None, {"params": []}])
def test_requests_without_a_stateless_version_are_legacy(body):
    assert http_era("POST", {}, body) is Era.SESSION


@pytest.mark.parametrize("http_method", ["GET", "DELETE", "OPTIONS"])
def test_only_posts_are_stateless(http_method):
    assert http_era(http_method, {"MCP-Protocol-Version": "2026-07-28"}, None) is Era.SESSION


def test_header_lookup_is_case_insensitive_on_plain_dicts():
    assert http_era("post", {"mCp-PrOtOcOl-VeRsIoN": "2026-07-28"}, None) is Era.STATELESS


def test_stdio_initialize_first_makes_the_connection_legacy():
    era = StdioEra()
    assert era.classify(request("initialize")) is Era.SESSION
    assert era.classify(request("tools/list", version="2026-07-28")) is Era.SESSION
    assert era.era is Era.SESSION


def test_stdio_stateless_meta_first_makes_the_connection_stateless():
    era = StdioEra()
    assert era.classify(request("tools/list", version="2026-07-28")) is Era.STATELESS
    assert era.classify(request("initialize")) is Era.STATELESS  # the stateless path refuses it (-32601)
    assert era.classify({"jsonrpc": "2.0", "method": "notifications/cancelled"}) is Era.STATELESS


def test_stdio_discover_is_answered_in_either_era_and_decides_nothing():
    era = StdioEra()
    assert era.classify(request("server/discover", version="2026-07-28")) is Era.STATELESS
    assert era.era is None
    assert era.classify(request("initialize")) is Era.SESSION
    assert era.classify(request("server/discover", version="2026-07-28")) is Era.STATELESS
    assert era.classify(request("tools/list")) is Era.SESSION


def test_stdio_notifications_before_any_request_are_legacy_and_decide_nothing():
    era = StdioEra()
    assert era.classify({"jsonrpc": "2.0", "method": "notifications/initialized"}) is Era.SESSION
    assert era.classify([request()]) is Era.SESSION
    assert era.era is None
    assert era.classify(request(version="2026-07-28")) is Era.STATELESS

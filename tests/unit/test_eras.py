"""Which era a message belongs to, chosen in one place (eras.choose) for HTTP per request and stdio per connection."""

from __future__ import annotations

import pytest

from flask_mcp_gevent import eras
from flask_mcp_gevent.eras import SESSION, STATELESS, StdioEra, choose
from flask_mcp_gevent.session import Session
from flask_mcp_gevent.stateless.metadata import (
    HANDSHAKE_VERSIONS,
    STATELESS_VERSIONS,
    SUPPORTED_VERSIONS,
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
def test_a_version_header_that_is_not_a_handshake_version_is_stateless(header):
    assert choose(header, request()) is STATELESS


@pytest.mark.parametrize("header", HANDSHAKE_VERSIONS)
def test_a_handshake_version_header_is_the_session_era_even_with_stateless_meta(header):
    assert choose(header, request(version="2026-07-28")) is SESSION


def test_without_the_header_the_body_meta_decides():
    assert choose(None, request(version="2026-07-28")) is STATELESS
    assert choose(None, request(version="1900-01-01")) is STATELESS
    assert choose(None, request(version="2025-11-25")) is SESSION
    assert choose("  ", request(version="2026-07-28")) is STATELESS


@pytest.mark.parametrize("body", [request(), request("initialize"), [request()], "junk", None, {"params": []}])
def test_requests_without_a_stateless_version_are_the_session_era(body):
    assert choose(None, body) is SESSION


def test_a_request_naming_a_session_is_stateless_only_when_it_says_2026_07_28_outright():
    assert choose("2030-01-01", request(), names_session=True) is SESSION  # a session's client's unknown version
    assert choose("2026-07-28", request(), names_session=True) is STATELESS
    assert choose("2030-01-01", request(version="2026-07-28"), names_session=True) is STATELESS
    assert choose(None, request(version="2026-07-28"), names_session=True) is STATELESS


def test_a_get_or_delete_is_chosen_by_its_header_alone():
    assert choose("2026-07-28", None) is STATELESS
    assert choose(None, None) is SESSION and choose("2025-11-25", None) is SESSION


def test_each_era_owns_its_table_its_checks_and_its_call_slots():
    assert "initialize" in SESSION.methods and "initialize" not in STATELESS.methods
    assert "server/discover" in STATELESS.methods and "server/discover" not in SESSION.methods
    tools_call = type("M", (), {"method": "tools/call"})()
    stored, local = Session(transport="streamable"), Session(transport="stdio")
    assert SESSION.takes_call_slot(stored, tools_call) and not STATELESS.takes_call_slot(stored, tools_call)
    assert not SESSION.takes_call_slot(local, tools_call)  # stdio's one local client is not held back


def test_the_http_routes_and_stdio_choose_through_eras_choose(monkeypatch):
    chosen = []
    real = eras.choose

    def spy(*args, **kwargs):
        chosen.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(eras, "choose", spy)
    from flask_mcp_gevent.web.routes import names_stateless_wire

    assert names_stateless_wire({"HTTP_MCP_PROTOCOL_VERSION": "2026-07-28"}) is True
    assert StdioEra().classify(request(version="2026-07-28")) is STATELESS
    assert len(chosen) == 2


def test_stdio_initialize_first_makes_the_connection_the_session_era():
    era = StdioEra()
    assert era.classify(request("initialize")) is SESSION
    assert era.classify(request("tools/list", version="2026-07-28")) is SESSION
    assert era.era is SESSION


def test_stdio_stateless_meta_first_makes_the_connection_stateless():
    era = StdioEra()
    assert era.classify(request("tools/list", version="2026-07-28")) is STATELESS
    assert era.classify(request("initialize")) is STATELESS  # the stateless path refuses it (-32601)
    assert era.classify({"jsonrpc": "2.0", "method": "notifications/cancelled"}) is STATELESS


def test_stdio_discover_is_answered_in_either_era_and_decides_nothing():
    era = StdioEra()
    assert era.classify(request("server/discover", version="2026-07-28")) is STATELESS
    assert era.era is None
    assert era.classify(request("initialize")) is SESSION
    assert era.classify(request("server/discover", version="2026-07-28")) is STATELESS
    assert era.classify(request("tools/list")) is SESSION


def test_stdio_notifications_before_any_request_are_the_session_era_and_decide_nothing():
    era = StdioEra()
    assert era.classify({"jsonrpc": "2.0", "method": "notifications/initialized"}) is SESSION
    assert era.classify([request()]) is SESSION
    assert era.era is None
    assert era.classify(request(version="2026-07-28")) is STATELESS

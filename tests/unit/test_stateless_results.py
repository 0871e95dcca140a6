"""stateless.results: what every 2026-07-28 result carries, server/discover, and the not-found translation."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.errors import RpcError, error_response
from flask_mcp_gevent.stateless.results import (
    CACHEABLE_METHODS,
    CacheHint,
    cache_hint,
    decorate,
    discover_result,
    input_required,
    stateless_capabilities,
    stateless_error,
)

INFO = {"name": "flask-mcp-gevent", "version": "1.0.0"}
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def test_every_result_gets_result_type_and_server_info():
    result = decorate("tools/call", {"content": [], "isError": False}, INFO)
    assert result == {"content": [], "isError": False, "resultType": "complete", "_meta": {SERVER_INFO: INFO}}
    assert decorate("completion/complete", {}, None) == {"resultType": "complete"}


def test_decorate_keeps_the_handlers_own_meta_and_leaves_its_input_alone():
    original = {"contents": [], "_meta": {"progressToken": 1}}
    result = decorate("resources/read", original, INFO)
    assert result["_meta"] == {"progressToken": 1, SERVER_INFO: INFO}
    assert original == {"contents": [], "_meta": {"progressToken": 1}}


@pytest.mark.parametrize("method", sorted(CACHEABLE_METHODS))
def test_cacheable_results_carry_ttl_and_scope(method):
    result = decorate(method, {}, INFO, CacheHint(5000, "public"))
    assert (result["ttlMs"], result["cacheScope"]) == (5000, "public")
    assert (decorate(method, {}, INFO)["ttlMs"], decorate(method, {}, INFO)["cacheScope"]) == (0, "private")


@pytest.mark.parametrize("method", ["tools/call", "prompts/get", "completion/complete", "subscriptions/listen"])
def test_other_results_carry_no_cache_hints(method):
    assert "ttlMs" not in decorate(method, {}, INFO, CacheHint(5000, "public"))


def test_input_required_results_carry_no_cache_hints_and_only_where_allowed():
    interim = input_required({"confirm": {"method": "elicitation/create", "params": {}}}, "s1.x.y")
    assert decorate("resources/read", interim, INFO) == {**interim, "_meta": {SERVER_INFO: INFO}}
    for method in ("tools/call", "prompts/get"):
        assert decorate(method, interim, INFO)["resultType"] == "input_required"
    for method in ("tools/list", "prompts/list", "server/discover"):
        with pytest.raises(ValueError):
            decorate(method, interim, INFO)


def test_input_required_needs_requests_or_state():
    assert input_required(request_state="s") == {"resultType": "input_required", "requestState": "s"}
    with pytest.raises(ValueError):
        input_required()


def test_the_scope_is_private_when_answers_depend_on_who_asks():
    assert cache_hint(authenticated=False) == CacheHint(0, "public")
    assert cache_hint(authenticated=True, ttl_ms=1000) == CacheHint(1000, "private")
    assert cache_hint(authenticated=False, ttl_ms=1000, retried=True) == CacheHint(0, "private")
    assert CacheHint(-5, "public").fields() == {"ttlMs": 0, "cacheScope": "public"}


def test_discover_names_versions_capabilities_instructions_identity_and_cache_hints():
    legacy = {"tools": {"listChanged": True}, "prompts": {"listChanged": True}, "logging": {}, "tasks": {}}
    result = discover_result(legacy, INFO, "Use echo.", CacheHint(0, "public"))
    assert result == {
        "resultType": "complete",
        "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
        "capabilities": {"tools": {"listChanged": True}, "prompts": {"listChanged": True}, "logging": {}},
        "instructions": "Use echo.",
        "_meta": {SERVER_INFO: INFO},
        "ttlMs": 0,
        "cacheScope": "public",
    }
    assert "instructions" not in discover_result({}, INFO)


def test_stateless_capabilities_drop_what_2026_removed():
    assert stateless_capabilities({"tasks": {"list": {}}, "completions": {}, "extensions": {"x/y": {}}}) == {
        "completions": {}, "extensions": {"x/y": {}}}


def test_resource_not_found_is_invalid_params_with_the_uri():
    legacy = RpcError(-32002, "Resource not found: test://nope", {"uri": "test://nope"}).to_dict()
    assert stateless_error(legacy) == {"code": -32602, "message": "Resource not found: test://nope",
                                    "data": {"uri": "test://nope"}}
    other = error_response(1, -32603, "boom")["error"]
    assert stateless_error(other) is other

"""Limits on a real gunicorn: body size, nesting, string length, batch, arguments, sessions, rate."""

from __future__ import annotations

import json

import httpx
import pytest

from flask_mcp_gevent.auth.api_keys import hash_key, new_key
from tests.e2e.raw_clients import BOTH, LegacyStream, StreamableSession, call_tool, initialize, request
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e

VERSION = "2025-03-26"  # the one version with batches
KEYS = {name: new_key() for name in ("shapes", "sessions", "hasty", "patient")}
RATE = 20
LIMITS = {
    "MCP_MAX_BODY_BYTES": "65536",
    "MCP_MAX_JSON_DEPTH": "16",
    "MCP_MAX_STRING_BYTES": "8192",
    "MCP_MAX_BATCH": "4",
    "MCP_MAX_ARGUMENT_BYTES": "16384",
    "MCP_MAX_SESSIONS_PER_PRINCIPAL": "2",
    "MCP_RATE_LIMIT": f"{RATE}/minute",
}


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """A server with small limits and one API key per test principal (the rate is counted per principal)."""
    keys_file = tmp_path_factory.mktemp("limits") / "keys.json"
    keys_file.write_text(json.dumps({hash_key(key): {"principal": name, "tools": ["*"]}
                                     for name, key in KEYS.items()}))
    with ServerProcess(env={"MCP_API_KEYS_FILE": str(keys_file), **LIMITS}) as server:
        yield server


def http_as(name: str) -> httpx.Client:
    """An httpx client authenticated as one of the test principals."""
    return httpx.Client(headers={"Authorization": f"Bearer {KEYS[name]}"}, timeout=httpx.Timeout(15.0, connect=5.0))


def nested(depth: int) -> dict:
    """A ping whose params nest to depth levels in total."""
    inner: object = 0
    for _ in range(depth - 2):
        inner = [inner]
    return request("ping", {"deep": inner})


@pytest.fixture(scope="module")
def shapes(limited):
    """A streamable session of the 'shapes' principal."""
    with http_as("shapes") as http:
        yield StreamableSession(http, limited.url, VERSION)


def test_an_oversize_body_gets_413(limited, shapes):
    oversize = shapes.post(call_tool("echo", {"text": "x" * 70000}))
    assert oversize.status_code == 413
    assert "MCP_MAX_BODY_BYTES" in oversize.json()["error"]["message"]


def test_a_deeply_nested_body_gets_400(shapes):
    assert shapes.post(nested(16)).status_code == 200
    deep = shapes.post(nested(17))
    assert deep.status_code == 400
    assert "MCP_MAX_JSON_DEPTH" in deep.json()["error"]["message"]
    # Far past any parser's own limit: still a clean 400, never a 500.
    hostile = shapes.post(None, content=b"[" * 60000, headers={"Content-Type": "application/json"})
    assert hostile.status_code == 400


def test_a_long_string_gets_413(shapes):
    long_string = shapes.post(request("ping", {"s": "x" * 9000}))
    assert long_string.status_code == 413
    assert "MCP_MAX_STRING_BYTES" in long_string.json()["error"]["message"]


def test_a_long_batch_gets_400(shapes):
    assert shapes.post([request("ping") for _ in range(4)]).status_code == 200
    long_batch = shapes.post([request("ping") for _ in range(5)])
    assert long_batch.status_code == 400
    assert "MCP_MAX_BATCH" in long_batch.json()["error"]["message"]


def test_oversize_tool_arguments_get_413(shapes):
    arguments = {"text": "x" * 8000, "pad": ["y" * 8000, "z" * 8000]}
    refused = shapes.post(call_tool("echo", arguments))
    assert refused.status_code == 413
    assert "MCP_MAX_ARGUMENT_BYTES" in refused.json()["error"]["message"]


def test_legacy_posts_meet_the_same_limits(limited):
    with http_as("shapes") as http, LegacyStream(http, limited.base_url) as stream:
        assert stream.post(nested(40)).status_code == 400
        assert stream.post(request("ping", {"s": "x" * 9000})).status_code == 413
        assert stream.post(request("ping")).status_code == 202


def test_sessions_per_principal_are_capped(limited):
    with http_as("sessions") as http:
        first = StreamableSession(http, limited.url, VERSION)
        StreamableSession(http, limited.url, VERSION)
        third = http.post(limited.url, json=initialize(VERSION), headers={"Accept": BOTH})
        assert third.status_code == 503
        assert "MCP_MAX_SESSIONS_PER_PRINCIPAL" in third.json()["error"]["message"]
        assert "Retry-After" in third.headers
        assert first.delete().status_code == 204
        assert StreamableSession(http, limited.url, VERSION).session_id


def test_exceeding_the_rate_gets_429_with_retry_after(limited):
    with http_as("hasty") as http:
        statuses = [http.post(limited.url, json=request("ping"), headers={"Accept": BOTH}).status_code
                    for _ in range(RATE + 1)]
        # The first RATE requests pass the limiter (then get 400 for having no session); the next is 429.
        assert 429 not in statuses[:RATE]
        assert statuses[RATE] == 429
        limited_response = http.post(limited.url, json=initialize(VERSION), headers={"Accept": BOTH})
        assert limited_response.status_code == 429
        retry_after = int(limited_response.headers["Retry-After"])
        assert 1 <= retry_after <= 60
        assert "MCP_RATE_LIMIT" in limited_response.json()["error"]["message"]
    with http_as("patient") as http:
        # Counted per principal: another principal is not slowed down.
        assert http.post(limited.url, json=initialize(VERSION), headers={"Accept": BOTH}).status_code == 200
    assert httpx.get(limited.base_url + "/healthz", timeout=15).status_code == 200

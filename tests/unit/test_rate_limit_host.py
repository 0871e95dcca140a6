"""MCP_RATE_LIMIT on a host app with its own Flask-Limiter: each limiter counts its own routes and keeps its own 429."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

from flask_mcp_gevent import MCP

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
HOST_ROUTE_LIMIT = 2


def host_app(mcp_settings: dict[str, Any], config: dict[str, Any] | None = None,
             limiter_first: bool = True) -> tuple[Flask, Limiter]:
    """A host with its own Limiter (one limited route, one exempt one) and MCP, added in either order."""
    app = Flask(__name__)
    app.config.update(config or {})
    limiter = Limiter(get_remote_address, storage_uri="memory://")
    if limiter_first:
        limiter.init_app(app)

    @app.get("/search")
    @limiter.limit(f"{HOST_ROUTE_LIMIT}/minute")
    def search() -> str:
        """A host route with a limit of the host's own."""
        return "results"

    @app.get("/free")
    @limiter.exempt
    def free() -> str:
        """A host route the host's Limiter leaves alone."""
        return "free"

    MCP(app, settings=mcp_settings)
    if not limiter_first:
        limiter.init_app(app)
    return app, limiter


def mcp_post(client: Any) -> Any:
    """One MCP POST without a session: 400 once past the limiter, 429 when over it."""
    return client.post("/mcp", json=PING)


@pytest.mark.parametrize("limiter_first", [True, False], ids=["host-limiter-first", "mcp-first"])
def test_the_hosts_429_page_stays_its_own_and_mcps_stays_json(limiter_first):
    app, _ = host_app({"rate_limit": "1/minute"}, limiter_first=limiter_first)
    client = app.test_client()
    assert [client.get("/search").status_code for _ in range(HOST_ROUTE_LIMIT)] == [200] * HOST_ROUTE_LIMIT
    host_refusal = client.get("/search")
    assert host_refusal.status_code == 429
    assert host_refusal.mimetype == "text/html" and "Too Many Requests" in host_refusal.get_data(as_text=True)
    assert mcp_post(client).status_code == 400
    mcp_refusal = mcp_post(client)
    assert mcp_refusal.status_code == 429 and mcp_refusal.mimetype == "application/json"
    assert "MCP_RATE_LIMIT" in mcp_refusal.get_json()["error"]["message"] and mcp_refusal.headers["Retry-After"]


def test_a_hosts_own_429_handler_answers_its_routes_and_mcp_keeps_its_json():
    app, _ = host_app({"rate_limit": "1/minute"})

    @app.errorhandler(429)
    def slow_down(exc: Exception) -> tuple[str, int]:
        """The host's own page for its limits."""
        return "slow down, says the host", 429

    client = app.test_client()
    for _ in range(HOST_ROUTE_LIMIT):
        client.get("/search")
    assert client.get("/search").get_data(as_text=True) == "slow down, says the host"
    mcp_post(client)
    assert mcp_post(client).get_json()["error"]["data"]["retryAfter"] >= 1


def test_each_limiter_counts_its_own_routes_only():
    app, host_limiter = host_app({"rate_limit": "1/minute"})
    client = app.test_client()
    assert [mcp_post(client).status_code for _ in range(2)] == [400, 429]  # MCP's limit spent
    # The host's route still has all of the host's limit, and no more: MCP counted none of it.
    assert [client.get("/search").status_code for _ in range(HOST_ROUTE_LIMIT + 1)] == [200, 200, 429]
    mcp_limiter = app.extensions["mcp"].limiter
    assert app.extensions["limiter"] == {host_limiter, mcp_limiter}
    assert not any(key.startswith("mcp_") and "limit" in key for key in app.extensions)


def test_mcps_limiter_reads_none_of_the_hosts_ratelimit_config():
    # The host's defaults are for its own Limiter, which exempts /free: MCP's must not put them on /free.
    app, _ = host_app({"rate_limit": "1/minute"}, config={"RATELIMIT_DEFAULT": "1/minute"})
    client = app.test_client()
    assert [client.get("/free").status_code for _ in range(3)] == [200, 200, 200]
    assert app.extensions["mcp"].limiter.limit_manager.default_limits == []


def test_a_host_that_turns_its_own_limiter_off_leaves_mcp_rate_limit_on():
    app, _ = host_app({"rate_limit": "1/minute"}, config={"RATELIMIT_ENABLED": False})
    client = app.test_client()
    assert [client.get("/search").status_code for _ in range(HOST_ROUTE_LIMIT + 1)] == [200] * (HOST_ROUTE_LIMIT + 1)
    assert [mcp_post(client).status_code for _ in range(2)] == [400, 429]


def test_a_hosts_limit_over_mcps_route_answers_json_without_naming_mcp_rate_limit():
    # The host's defaults cover every route, /mcp too: its refusal there is an HTTP error on an MCP page.
    app, _ = host_app({"rate_limit": "5/minute"}, config={"RATELIMIT_DEFAULT": "1/minute"})
    client = app.test_client()
    assert mcp_post(client).status_code == 400
    refusal = mcp_post(client)
    assert refusal.status_code == 429 and refusal.mimetype == "application/json"
    assert refusal.get_json()["error"]["message"] == "Too many requests (1 per 1 minute)"  # the host's, not MCP's


def test_the_templates_app_answers_every_429_as_json():
    from app import create_app

    app = create_app({"MCP_RATE_LIMIT": "1/minute"})
    client = app.test_client()
    mcp_post(client)
    refusal = mcp_post(client)
    assert refusal.status_code == 429 and refusal.get_json()["error"]["data"]["retryAfter"] >= 1
    assert app.extensions["mcp"].limiter in app.extensions["limiter"]

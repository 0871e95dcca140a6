"""A Streamable HTTP initialize caught by a session store outage: 503, Retry-After, -32004 with its id, no session."""

from __future__ import annotations

import pytest

from app import create_app
from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.errors import SERVER_UNAVAILABLE, STORE_UNAVAILABLE_MESSAGE
from flask_mcp_gevent.store.memory import MemorySessions

INIT = {"jsonrpc": "2.0", "id": 41, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def unreachable(*_):
    """Fail as a store call does while Redis is unreachable."""
    raise StoreUnavailable("session store unreachable")


# The hot path and Flask's route (forced by a CORS setting), each accepting JSON only or JSON and SSE.
@pytest.mark.parametrize("config", [{}, {"MCP_CORS_ORIGINS": "https://example.invalid"}])
@pytest.mark.parametrize("accept", ["application/json", "application/json, text/event-stream"])
@pytest.mark.parametrize("stalled", ["create_session", "update_session"])
def test_initialize_caught_by_the_outage_gets_503_with_its_id(config, accept, stalled, monkeypatch):
    # Stalled before the app is built: its server binds the store's methods as it is made.
    monkeypatch.setattr(MemorySessions, stalled, unreachable)
    app = create_app(config)
    store = app.extensions["mcp"].server.store
    answer = app.test_client().post("/mcp", json=INIT, headers={"Accept": accept})
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "2"
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.get_json() == {"jsonrpc": "2.0", "id": 41,
                                 "error": {"code": SERVER_UNAVAILABLE, "message": STORE_UNAVAILABLE_MESSAGE}}
    assert "Mcp-Session-Id" not in answer.headers
    assert store.sessions.session_count() == 0

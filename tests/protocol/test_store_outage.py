"""A session store that stalls in the middle of a request: the documented -32004, never -32603."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.errors import SERVER_UNAVAILABLE, STORE_UNAVAILABLE_MESSAGE
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.store import StoreUnavailable

STORE_UNAVAILABLE = {"code": SERVER_UNAVAILABLE, "message": STORE_UNAVAILABLE_MESSAGE}


def stall_updates(hub, monkeypatch) -> None:
    """Make every session change fail from now on, as during a Redis outage."""

    def unreachable(*_):
        raise StoreUnavailable("session store unreachable")

    monkeypatch.setattr(hub, "update_session", unreachable)


def test_initialize_caught_by_the_outage_answers_store_unavailable(rpc, monkeypatch):
    stall_updates(rpc.dispatcher.store, monkeypatch)
    response = rpc.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}, request_id="init")
    assert response == {"jsonrpc": "2.0", "id": "init", "error": STORE_UNAVAILABLE}


def test_set_level_caught_by_the_outage_answers_store_unavailable(make_rpc, monkeypatch):
    rpc = make_rpc("2025-06-18")
    stall_updates(rpc.dispatcher.store, monkeypatch)
    assert rpc.request("logging/setLevel", {"level": "error"})["error"] == STORE_UNAVAILABLE


def test_a_notification_caught_by_the_outage_is_not_acknowledged(rpc, monkeypatch):
    assert rpc.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})["result"]
    stall_updates(rpc.dispatcher.store, monkeypatch)
    body = parse_body(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    # The transport answers 503 instead of 202, so the client sends it again.
    with pytest.raises(StoreUnavailable):
        rpc.dispatcher.accept(rpc.session, body, rpc.sent.append)

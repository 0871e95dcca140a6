"""A session store that stalls in the middle of a request: the documented -32004, never -32603."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.errors import SERVER_UNAVAILABLE, STORE_UNAVAILABLE_MESSAGE
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.session import SessionChange, SessionUpdate
from flask_mcp_gevent.store.memory import MemorySessions

STORE_UNAVAILABLE = {"code": SERVER_UNAVAILABLE, "message": STORE_UNAVAILABLE_MESSAGE}


@pytest.fixture
def outage(monkeypatch) -> Callable[[], None]:
    """A switch that makes every session change fail from then on, as during a Redis outage.

    Put in the store before the server is built (the server fixture below): the server binds its methods then.
    """
    stalled: list[bool] = []
    update = MemorySessions.update_session

    def update_unless_stalled(self, session_id: str, change: SessionChange) -> SessionUpdate:
        """Apply the change, or fail as an unreachable store does once the outage began."""
        if stalled:
            raise StoreUnavailable("session store unreachable")
        return update(self, session_id, change)

    monkeypatch.setattr(MemorySessions, "update_session", update_unless_stalled)
    return lambda: stalled.append(True)


@pytest.fixture
def server(outage, make_server, registry) -> Server:
    """A server on the in-memory store, built with the outage switch in it."""
    return make_server(registry=registry)


def test_initialize_caught_by_the_outage_answers_store_unavailable(rpc, outage):
    outage()
    response = rpc.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}, request_id="init")
    assert response == {"jsonrpc": "2.0", "id": "init", "error": STORE_UNAVAILABLE}


def test_set_level_caught_by_the_outage_answers_store_unavailable(make_rpc, outage):
    rpc = make_rpc("2025-06-18")
    outage()
    assert rpc.request("logging/setLevel", {"level": "error"})["error"] == STORE_UNAVAILABLE


def test_a_notification_caught_by_the_outage_is_not_acknowledged(rpc, outage):
    assert rpc.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})["result"]
    outage()
    body = parse_body(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    # The transport answers 503 instead of 202, so the client sends it again.
    with pytest.raises(StoreUnavailable):
        rpc.server.accept(rpc.session, body, rpc.sent.append)

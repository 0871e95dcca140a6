"""Handlers change the stored session, not only the request's copy: subscriptions, their bound, level, initialize."""

from __future__ import annotations

import pytest

import flask_mcp_gevent.protocol.methods
from flask_mcp_gevent.errors import INVALID_PARAMS, INVALID_REQUEST
from mcp_tools import Registry


@pytest.fixture
def registry() -> Registry:
    """The shipped tools and resources and the conformance fixtures (test://template/{id}/data)."""
    return Registry.discover(plugins=["tests.conformance.fixtures"])


def stored(rpc):
    """The session as the store holds it now."""
    return rpc.server.store.sessions.peek_session(rpc.session.id)


def test_subscriptions_past_the_bound_are_refused_and_not_kept(make_rpc, monkeypatch):
    monkeypatch.setattr(flask_mcp_gevent.protocol.methods, "MAX_SUBSCRIPTIONS", 3)
    rpc = make_rpc("2025-06-18")
    for n in range(3):
        assert rpc.request("resources/subscribe", {"uri": f"test://template/{n}/data"})["result"] == {}
    refused = rpc.request("resources/subscribe", {"uri": "test://template/9/data"})
    assert refused["error"]["code"] == INVALID_PARAMS
    assert "at most 3" in refused["error"]["message"]
    # Subscribing again to one already held is no new subscription.
    assert rpc.request("resources/subscribe", {"uri": "test://template/0/data"})["result"] == {}
    assert stored(rpc).subscriptions == [f"test://template/{n}/data" for n in range(3)]


def test_set_level_and_unsubscribe_reach_the_stored_session(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert rpc.request("logging/setLevel", {"level": "warning"})["result"] == {}
    assert rpc.request("resources/subscribe", {"uri": "test://template/1/data"})["result"] == {}
    assert rpc.request("resources/unsubscribe", {"uri": "test://template/1/data"})["result"] == {}
    assert (stored(rpc).log_level, stored(rpc).subscriptions, stored(rpc).initialized) == ("warning", [], True)


def test_a_second_initialize_is_refused_and_changes_nothing(make_rpc):
    rpc = make_rpc("2025-06-18")
    again = rpc.request("initialize", {"protocolVersion": "2025-03-26", "capabilities": {"roots": {}}})
    assert again["error"]["code"] == INVALID_REQUEST
    assert (stored(rpc).protocol_version, stored(rpc).client_capabilities) == ("2025-06-18", {})

"""Session changes on both stores: atomic under concurrency, bounded, exact; and lookups that touch nothing foreign.

Each test runs once on MemoryStore and once on RedisStore against a real redis-server
(the fixtures come from tests/support/stores.py).
"""

from __future__ import annotations

import gevent

from flask_mcp_gevent.session import SessionChange
from tests.redis_server import redis_server  # noqa: F401  (fixture)
from tests.support.stores import new_session

CONCURRENT = 100


def test_concurrent_subscribes_are_all_kept(store):  # noqa: F811
    session = new_session(store)
    uris = [f"test://item/{n}" for n in range(CONCURRENT)]
    changes = [gevent.spawn(store.sessions.update_session, session.id, SessionChange(subscribe=uri)) for uri in uris]
    gevent.joinall(changes, timeout=10, raise_error=True)
    assert all(change.value.applied for change in changes)
    assert sorted(store.sessions.peek_session(session.id).subscriptions) == sorted(uris)


def test_concurrent_changes_of_different_fields_keep_each_other(store):  # noqa: F811
    session = new_session(store)
    changes = [SessionChange(subscribe="test://a"), SessionChange(assign={"log_level": "error"}),
               SessionChange(assign={"initialized": True}), SessionChange(subscribe="test://b")]
    gevent.joinall([gevent.spawn(store.sessions.update_session, session.id, c) for c in changes], timeout=10,
                   raise_error=True)
    stored = store.sessions.peek_session(session.id)
    assert (sorted(stored.subscriptions), stored.log_level, stored.initialized) == (["test://a", "test://b"],
                                                                                   "error", True)


def test_the_subscription_limit_holds_under_concurrency(store):  # noqa: F811
    session = new_session(store)
    changes = [gevent.spawn(store.sessions.update_session, session.id, SessionChange(subscribe=f"test://{n}",
                                                                         subscription_limit=5))
               for n in range(20)]
    gevent.joinall(changes, timeout=10, raise_error=True)
    assert sum(change.value.applied for change in changes) == 5
    assert len(store.sessions.peek_session(session.id).subscriptions) == 5
    # Subscribing again to a URI already held is no new subscription, so the limit does not refuse it.
    held = store.sessions.peek_session(session.id).subscriptions[0]
    assert store.sessions.update_session(session.id, SessionChange(subscribe=held, subscription_limit=5)).applied


def test_unsubscribe_removes_one_uri_and_an_empty_list_stays_a_list(store):  # noqa: F811
    session = new_session(store)
    store.sessions.update_session(session.id, SessionChange(subscribe="test://a"))
    update = store.sessions.update_session(session.id, SessionChange(unsubscribe="test://a"))
    assert update.applied and update.session.subscriptions == []
    assert store.sessions.peek_session(session.id).subscriptions == []
    assert store.sessions.update_session(session.id, SessionChange(unsubscribe="test://never")).applied


def test_only_one_of_two_racing_initializes_wins(store):  # noqa: F811
    session = new_session(store)
    changes = [gevent.spawn(store.sessions.update_session, session.id, SessionChange(
        assign={"protocol_version": version}, unless_negotiated=True)) for version in ("2025-06-18", "2025-03-26")]
    gevent.joinall(changes, timeout=10, raise_error=True)
    winners = [change.value for change in changes if change.value.applied]
    assert len(winners) == 1
    assert store.sessions.peek_session(session.id).protocol_version == winners[0].session.protocol_version


def test_client_chosen_fields_survive_a_change_exactly(store):  # noqa: F811
    session = new_session(store)
    info = {"name": "c", "icons": [], "big": 12345678901234567, "ratio": 0.1234567890123}
    capabilities = {"roots": {"listChanged": True}, "experimental": {"list": [], "object": {}}}
    change = SessionChange(assign={"client_info": info, "client_capabilities": capabilities})
    store.sessions.update_session(session.id, change)
    store.sessions.update_session(session.id, SessionChange(subscribe="test://a"))
    stored = store.sessions.peek_session(session.id)
    assert (stored.client_info, stored.client_capabilities) == (info, capabilities)


def test_a_change_to_a_closed_session_is_not_applied(store):  # noqa: F811
    session = new_session(store)
    store.sessions.close_session(session.id)
    assert store.sessions.update_session(session.id, SessionChange(subscribe="test://a")) == (False, None)
    assert store.sessions.peek_session(session.id) is None


def test_a_change_keeps_the_idle_ttl(make_store):  # noqa: F811
    short_lived = make_store(MCP_SESSION_TTL_S=0.6)
    session = new_session(short_lived)
    for n in range(8):
        make_store.elapse(0.1)
        short_lived.sessions.update_session(session.id, SessionChange(subscribe=f"test://{n}"))
    assert short_lived.sessions.peek_session(session.id) is None


# looking a session up for someone else
def test_a_refused_lookup_does_not_refresh_the_idle_ttl(make_store):  # noqa: F811
    short_lived = make_store(MCP_SESSION_TTL_S=0.6)
    session = new_session(short_lived, principal="alice")

    def someone_else(stored) -> bool:
        return stored.principal == "mallory"

    # Probing all along: every probe is refused, and the session still expires after its TTL.
    for _ in range(16):
        assert short_lived.sessions.get_session(session.id, accept=someone_else) is None
        make_store.elapse(0.05)
    assert short_lived.sessions.peek_session(session.id) is None


def test_an_accepted_lookup_refreshes_the_idle_ttl(make_store):  # noqa: F811
    short_lived = make_store(MCP_SESSION_TTL_S=1.5)
    session = new_session(short_lived, principal="alice")
    # Two TTLs in all; the second between lookups is margin for sleeps that overrun on a loaded machine.
    for _ in range(6):
        make_store.elapse(0.5)
        assert short_lived.sessions.get_session(session.id, accept=lambda s: s.principal == "alice") is not None


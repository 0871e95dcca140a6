"""The Redis store's call slots: leases that run out come back once the set looks full, a held one is renewed."""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.store import redis_sessions
from flask_mcp_gevent.store.redis_keys import call_slots_key
from tests.support.stores import new_session


def slots(redis_server, session_id: str) -> list[bytes]:
    """The lease tokens in the session's running-calls set."""
    return redis_server.client().zrange(call_slots_key(session_id), 0, -1)


@pytest.mark.redis
def test_leases_that_ran_out_free_their_slots_once_the_set_looks_full(redis_stores, redis_server):
    store = redis_stores()
    session = new_session(store)
    client = redis_server.client()
    calls = call_slots_key(session.id)
    client.zadd(calls, {"dead|1": 1, "dead|2": 2})  # a killed worker's leases, run out long ago
    client.pexpire(calls, 60_000)
    assert store.sessions.take_call_slot(session.id, 3)  # room left: the dead leases are not even looked at
    assert b"dead|1" in slots(redis_server, session.id)
    # Full to the count, but two ran out: they go, and this one is taken.
    assert store.sessions.take_call_slot(session.id, 3)
    assert not any(token.startswith(b"dead|") for token in slots(redis_server, session.id))
    assert len(slots(redis_server, session.id)) == 2
    assert store.sessions.take_call_slot(session.id, 3)
    assert store.sessions.take_call_slot(session.id, 3) is None  # three live leases: full


@pytest.mark.redis
def test_a_held_slot_is_renewed_past_its_lease_and_given_back_is_renewed_no_more(redis_stores, redis_server,
                                                                                 monkeypatch):
    monkeypatch.setattr(redis_sessions, "CALL_LEASE_MS", 1000)
    store = redis_stores()
    session = new_session(store)
    held = store.sessions.take_call_slot(session.id, 1)
    assert held
    for _ in range(6):
        gevent.sleep(0.25)
        store.sessions.renew_call_leases()
    # The lease was 1 s, 1.5 s ago: renewed, the slot is still taken.
    assert store.sessions.take_call_slot(session.id, 1) is None
    assert slots(redis_server, session.id) == [held.encode()]
    store.sessions.give_back_call_slot(session.id, held)
    assert slots(redis_server, session.id) == []
    assert held not in store.sessions.call_leases

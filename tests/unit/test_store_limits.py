"""What the store counts for limits.py, on both backends: sessions per owner, the pending TTL, call slots."""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.conditions import QuotaFull
from flask_mcp_gevent.session import Session
from flask_mcp_gevent.store import redis_sessions
from tests.redis_server import redis_server  # noqa: F401  (fixture)

OWNER = "address:192.0.2.1"


def test_an_owner_holds_at_most_its_limit_and_an_ended_session_frees_its_place(make_store):  # noqa: F811
    store = make_store()
    first = Session()
    store.sessions.create_session(first, OWNER, 2)
    store.sessions.create_session(Session(), OWNER, 2)
    with pytest.raises(QuotaFull):
        store.sessions.create_session(Session(), OWNER, 2)
    store.sessions.create_session(Session(), "address:192.0.2.2", 2)  # another owner has its own count
    store.sessions.create_session(Session())  # no owner: only the total applies
    store.sessions.close_session(first.id)
    store.sessions.create_session(Session(), OWNER, 2)


@pytest.mark.redis
def test_workers_sharing_redis_share_one_count_per_owner(redis_stores):  # noqa: F811
    workers = [redis_stores(), redis_stores(), redis_stores()]
    stored = refused = 0
    for n in range(9):
        try:
            workers[n % 3].sessions.create_session(Session(), OWNER, 5)
            stored += 1
        except QuotaFull:
            refused += 1
    assert (stored, refused) == (5, 4)


def test_a_session_nobody_came_back_to_expires_after_the_pending_ttl(make_store):  # noqa: F811
    store = make_store(MCP_PENDING_SESSION_TTL_S=0.3, MCP_SESSION_TTL_S=60)
    pending, used = Session(), Session()
    store.sessions.create_session(pending)
    store.sessions.create_session(used)
    assert store.sessions.get_session(used.id) is not None  # a follow-up request gives it the full TTL
    make_store.elapse(0.7)
    assert store.sessions.peek_session(pending.id) is None
    assert store.sessions.peek_session(used.id) is not None


def test_a_session_s_call_slots_are_limited_and_given_back(make_store):  # noqa: F811
    store = make_store()
    first, second, third = (store.sessions.take_call_slot("s1", 2) for _ in range(3))
    assert first and second and third is None
    assert store.sessions.take_call_slot("s2", 2)  # another session has its own slots
    store.sessions.give_back_call_slot("s1", first)
    assert store.sessions.take_call_slot("s1", 2)


@pytest.mark.redis
def test_a_call_slot_whose_worker_stopped_renewing_comes_back_when_its_lease_ends(redis_stores, monkeypatch):  # noqa: F811
    monkeypatch.setattr(redis_sessions, "CALL_LEASE_MS", 1000)
    alive, dead, other = redis_stores(), redis_stores(), redis_stores()
    assert alive.sessions.take_call_slot("renewed", 1) and dead.sessions.take_call_slot("abandoned", 1)
    # Connected now: a first connection made after the renewals could outlast the renewed lease on a busy machine.
    assert other.sessions.peek_session("nobody") is None
    dead.sessions.call_leases.clear()  # a killed worker renews nothing
    for _ in range(6):  # 1.5 s: past the abandoned lease, renewed every quarter of the renewed one
        gevent.sleep(0.25)
        alive.sessions.renew_call_leases()
    assert other.sessions.take_call_slot("renewed", 1) is None
    assert other.sessions.take_call_slot("abandoned", 1)

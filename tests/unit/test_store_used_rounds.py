"""FleetBus.use_once and FleetBus.is_used on every backend: the record that makes a multi-round request's last round
single-use.

Memory: a bounded map in the process (MCP_REQUEST_STATE_USED_MAX). Redis (one server, a cluster): one key per request,
SET NX PX, shared by every worker. Both forget an id when its time is over.
"""

from __future__ import annotations

import secrets

import gevent
import pytest

from flask_mcp_gevent.conditions import CapacityError
from flask_mcp_gevent.store.memory import MemoryStore, UsedOnce
from flask_mcp_gevent.store.redis_keys import used_rounds_key
from tests.support.stores import SteppedClock


def new_id() -> bytes:
    """A request id as the requestState codec mints them."""
    return secrets.token_bytes(16)


def test_an_id_is_used_once_and_then_known_as_used(store):
    rounds_id = new_id()
    assert store.fleet.is_used(rounds_id) is False
    assert store.fleet.use_once(rounds_id, 60) is True
    assert store.fleet.use_once(rounds_id, 60) is False
    assert store.fleet.is_used(rounds_id) is True
    assert store.fleet.is_used(new_id()) is False


def test_every_worker_sees_an_id_another_used(make_store):
    first, second = make_store(), make_store()
    rounds_id = new_id()
    assert first.fleet.use_once(rounds_id, 60) is True
    if isinstance(first, MemoryStore):
        assert second.fleet.use_once(rounds_id, 60) is True  # the in-memory store's record is its own process's
    else:
        assert second.fleet.use_once(rounds_id, 60) is False
        assert second.fleet.is_used(rounds_id) is True


def test_of_many_greenlets_using_one_id_at_once_one_wins(make_store):
    stores = [make_store() for _ in range(2)]
    shared = stores[0] if isinstance(stores[0], MemoryStore) else None
    rounds_id = new_id()
    greenlets = [gevent.spawn((shared or stores[n % 2]).fleet.use_once, rounds_id, 60) for n in range(20)]
    gevent.joinall(greenlets, timeout=10, raise_error=True)
    assert sorted(g.value for g in greenlets) == [False] * 19 + [True]


def test_an_id_is_forgotten_when_its_time_is_over(make_store):
    store = make_store()
    rounds_id = new_id()
    store.fleet.use_once(rounds_id, 0.3)
    make_store.elapse(0.6)
    assert store.fleet.is_used(rounds_id) is False
    assert store.fleet.use_once(rounds_id, 60) is True


@pytest.mark.redis
def test_redis_keeps_one_key_per_id_that_expires_with_the_state(redis_stores):
    store = redis_stores(MCP_REQUEST_STATE_TTL_S=600)
    rounds_id = new_id()
    store.fleet.use_once(rounds_id, 600)
    client = redis_stores.server.client()
    assert 599_000 < client.pttl(used_rounds_key(rounds_id)) <= 600_000
    assert client.memory_usage(used_rounds_key(rounds_id)) < 200


def test_a_full_memory_record_refuses_a_new_id_until_one_expires():
    clock = SteppedClock()
    record = UsedOnce(2, clock)
    assert record.use(b"a", 10) and record.use(b"b", 20)
    with pytest.raises(CapacityError, match="MCP_REQUEST_STATE_USED_MAX"):
        record.use(b"c", 10)
    assert record.use(b"a", 10) is False  # still remembered: never forgotten to make room
    clock.step(10)
    assert record.use(b"c", 10) is True
    assert len(record) == 2


def test_the_memory_record_drops_expired_ids_when_it_records_another():
    clock = SteppedClock()
    record = UsedOnce(100_000, clock)
    for n in range(50_000):
        record.use(n.to_bytes(16, "big"), 5)
    clock.step(5)
    record.use(b"late", 5)
    assert len(record) == 1


def test_an_id_of_a_shorter_lifetime_behind_a_longer_one_is_forgotten_when_its_own_time_is_over():
    clock = SteppedClock()
    record = UsedOnce(10, clock)
    assert record.use(b"long", 100) and record.use(b"short", 5)
    clock.step(5)
    assert not record.holds(b"short") and record.holds(b"long")
    assert record.use(b"short", 5) is True  # used again once its time is over, and remembered anew
    assert record.use(b"short", 5) is False

"""Replay logs and stream queues are bounded in bytes as well as in messages, on both stores.

MCP_REPLAY_MAX_BYTES drops a session's oldest replay entries (never the newest);
MCP_QUEUE_MAX_BYTES cuts off a live stream whose client lets that much pile up,
as MCP_QUEUE_MAX does for a count.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import gevent
import pytest

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.session import Session
from flask_mcp_gevent.store import Store
from flask_mcp_gevent.store.memory import MemoryStore
from flask_mcp_gevent.store.redis import RedisStore, session_keys
from flask_mcp_gevent.subscription import StreamClosed
from tests.redis_server import redis_server  # noqa: F401  (fixture)

BACKENDS = ["memory", pytest.param("redis", marks=pytest.mark.redis)]
KIB = 1024


@pytest.fixture(params=BACKENDS)
def make_store(request) -> Iterator[Any]:
    """Build stores of one backend with MCP_* overrides; the Redis ones share an emptied redis-server."""
    made: list[Store] = []
    url = ""
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
        server.client().flushdb()
        url = server.url

    def build(**overrides: Any) -> Store:
        config = {"MCP_REDIS_URL": url, **{key: str(value) for key, value in overrides.items()}}
        settings = Settings.from_mapping(config)
        store: Store = RedisStore(settings) if url else MemoryStore(settings)
        made.append(store)
        return store

    yield build
    for store in made:
        store.events.shutdown()
        if isinstance(store, RedisStore):
            store.stop()


def big_message(n: int, size: int) -> dict[str, Any]:
    """A notification numbered n whose JSON is about size bytes."""
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n, "data": "x" * size}}


def replayed(store: Store, session_id: str) -> list[tuple[str, bytes]]:
    """Everything a new stream of the session gets from the replay log."""
    subscription = store.events.subscribe(session_id, "0")
    events = []
    try:
        for _ in range(1000):
            item = subscription.get(0.2)
            if item is None:
                break
            events.append(item)
    finally:
        subscription.close()
    return events


def numbers(events: list[tuple[str, bytes]]) -> list[int]:
    """The n of each event."""
    return [json.loads(data)["params"]["n"] for _, data in events]


def test_replay_keeps_the_newest_events_within_replay_max_bytes(make_store):
    store = make_store(MCP_REPLAY_MAX_BYTES=50 * KIB)
    session = Session()
    store.sessions.create_session(session)
    for n in range(40):
        store.events.publish(session.id, big_message(n, 10 * KIB))
    events = replayed(store, session.id)
    kept = sum(len(data) for _, data in events)
    assert kept <= 50 * KIB
    # Oldest first out: what is left is the newest ones, in order, as many as fit.
    assert numbers(events) == list(range(40 - len(events), 40))
    assert len(events) == 4


def test_a_message_larger_than_the_replay_bound_is_still_kept_alone(make_store):
    store = make_store(MCP_REPLAY_MAX_BYTES=4 * KIB)
    session = Session()
    store.sessions.create_session(session)
    for n in range(5):
        store.events.publish(session.id, big_message(n, KIB))
    store.events.publish(session.id, big_message(5, 20 * KIB))
    assert numbers(replayed(store, session.id)) == [5]
    if isinstance(store, RedisStore):  # the log's byte counter holds that one entry
        assert int(store.link.client.get(session_keys(session.id).replay_bytes)) == len(dumps(big_message(5, 20 * KIB)))


def test_replay_count_and_byte_bounds_both_hold(make_store):
    store = make_store(MCP_REPLAY_MAX=3, MCP_REPLAY_MAX_BYTES=1024 * KIB)
    session = Session()
    store.sessions.create_session(session)
    for n in range(50):
        store.events.publish(session.id, big_message(n, 100))
    assert numbers(replayed(store, session.id)) == [47, 48, 49]


def test_live_stream_past_queue_max_bytes_is_cut_off_as_a_slow_consumer(make_store):
    store = make_store(MCP_QUEUE_MAX_BYTES=30 * KIB)
    session = Session()
    store.sessions.create_session(session)
    subscription = store.events.subscribe(session.id)
    for n in range(10):
        store.events.publish(session.id, big_message(n, 10 * KIB))
    gevent.sleep(0.3)  # let live delivery reach the stream's queue
    received = 0
    with pytest.raises(StreamClosed) as closed:
        for _ in range(20):
            if subscription.get(2.0) is not None:
                received += 1
    assert closed.value.reason == "slow consumer"
    assert received <= 3
    subscription.close()


def test_an_empty_queue_takes_one_message_larger_than_its_byte_bound(make_store):
    store = make_store(MCP_QUEUE_MAX_BYTES=4 * KIB)
    session = Session()
    store.sessions.create_session(session)
    subscription = store.events.subscribe(session.id)
    try:
        for n in range(3):
            store.events.publish(session.id, big_message(n, 20 * KIB))
            item = subscription.get(5.0)
            assert item is not None and json.loads(item[1])["params"]["n"] == n
    finally:
        subscription.close()


@pytest.mark.redis
def test_redis_replay_stream_stays_under_its_byte_bound_in_redis(redis_server):  # noqa: F811
    redis_server.client().flushdb()
    store = RedisStore(Settings.from_mapping({"MCP_REDIS_URL": redis_server.url, "MCP_REPLAY_MAX_BYTES": 256 * KIB}))
    try:
        session = Session()
        store.sessions.create_session(session)
        for n in range(60):
            store.events.publish(session.id, big_message(n, 64 * KIB))
        keys = session_keys(session.id)
        client = redis_server.client()
        assert client.xlen(keys.replay) == 3
        assert int(client.get(keys.replay_bytes)) == 3 * len(dumps(big_message(59, 64 * KIB)))
        assert client.memory_usage(keys.replay, samples=0) < 512 * KIB
    finally:
        store.stop()


@pytest.mark.redis
def test_redis_replay_byte_counter_is_rebuilt_from_the_log_when_it_vanished(redis_server):  # noqa: F811
    redis_server.client().flushdb()
    store = RedisStore(Settings.from_mapping({"MCP_REDIS_URL": redis_server.url, "MCP_REPLAY_MAX_BYTES": 40 * KIB}))
    try:
        session = Session()
        store.sessions.create_session(session)
        for n in range(3):
            store.events.publish(session.id, big_message(n, 10 * KIB))
        keys = session_keys(session.id)
        client = redis_server.client()
        client.delete(keys.replay_bytes)  # as if it had expired before the log
        for n in range(3, 20):
            store.events.publish(session.id, big_message(n, 10 * KIB))
        events = replayed(store, session.id)
        assert numbers(events) == [17, 18, 19]
        assert int(client.get(keys.replay_bytes)) == sum(len(data) for _, data in events)
    finally:
        store.stop()


def test_memory_replay_byte_count_matches_what_it_holds():
    store = MemoryStore(Settings.from_mapping({"MCP_REPLAY_MAX": 7, "MCP_REPLAY_MAX_BYTES": 30 * KIB}))
    session = Session()
    store.sessions.create_session(session)
    deadline = time.monotonic() + 5
    for n in range(200):
        store.events.publish(session.id, big_message(n, (n % 9) * KIB))
        slot = store.sessions.slots[session.id]
        assert slot.replay_bytes == sum(len(data) for _, data, _ in slot.replay)
        assert slot.replay_bytes <= 30 * KIB or len(slot.replay) == 1
        assert time.monotonic() < deadline

"""The Redis store's command interface (store/redis_link.py) and a call slot freed before its answer can be seen.

redis-py's implementation (TLS, Unix sockets, Sentinel, Cluster) must keep the store's guarantees as the multiplexer
does: a script Redis forgot runs once, and a call slot given back is free before the answer can be seen.
"""

from __future__ import annotations

import time

import gevent
import pytest
import redis

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.session import SessionChange
from flask_mcp_gevent.store import redis_link
from flask_mcp_gevent.store.redis_connection import CooperativeConnection
from flask_mcp_gevent.store.redis_keys import call_slots_key
from flask_mcp_gevent.store.redis_link import RedisLink, multiplexer_for
from flask_mcp_gevent.store.redis_multiplex import Multiplexer, pack
from tests.redis_server import redis_server  # noqa: F401  (fixture)
from tests.support.stores import drain, message, new_session, numbers


def test_pack_writes_the_redis_protocol_for_text_bytes_and_integers():
    assert pack(("SET", b"k\r\n", 42, "é")) == b"*4\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$2\r\n42\r\n$2\r\n\xc3\xa9\r\n"


@pytest.mark.parametrize("value", [True, None])
def test_pack_refuses_values_redis_py_would_not_send_as_they_are(value):
    with pytest.raises(TypeError):
        pack(("SET", "k", value))


def test_only_a_plain_blocking_pool_of_gevent_sockets_gets_the_multiplexer():
    plain = redis.Redis(connection_pool=redis.BlockingConnectionPool(connection_class=CooperativeConnection))
    assert isinstance(multiplexer_for(plain), Multiplexer)
    assert multiplexer_for(redis.Redis(connection_pool=redis.BlockingConnectionPool())) is None
    assert multiplexer_for(redis.Redis(connection_pool=redis.ConnectionPool())) is None


@pytest.fixture
def redis_py_link(redis_server, monkeypatch):  # noqa: F811
    """A link to a Redis the multiplexer does not serve (as over TLS, a Unix socket or Sentinel): redis-py sends."""
    monkeypatch.setattr(redis_link, "connect", lambda settings, name: redis.Redis(
        connection_pool=redis.BlockingConnectionPool.from_url(redis_server.url, max_connections=1)))
    link = RedisLink(None, lambda: None, {"count_run": "return redis.call('INCR', KEYS[1])"})
    link.reset()
    yield link
    link.stop()


@pytest.mark.redis
def test_redis_py_commands_reply_as_redis_py(redis_py_link):
    link = redis_py_link
    assert link.execute("SET", "k", b"v")
    assert link.multiplexer is None
    assert link.execute("GET", "k") == b"v"
    assert link.execute("GET", "missing") is None
    with pytest.raises(redis.ResponseError):
        link.execute("INCR", "k")  # not a number
    assert link.execute("ECHO", "next") == b"next"  # the one connection went back with nothing unread


@pytest.mark.redis
def test_a_script_redis_forgot_is_loaded_and_runs_once(redis_py_link):
    link = redis_py_link
    link.execute("DEL", "runs")
    link.execute("SCRIPT", "FLUSH")
    assert link.run("count_run", ["runs"], []) == 1
    assert link.execute("GET", "runs") == b"1"


@pytest.mark.redis
def test_a_script_run_for_each_of_many_keys_replies_in_order_across_round_trips(redis_py_link, monkeypatch):
    monkeypatch.setattr(redis_link, "RUN_BATCH", 3)
    link = redis_py_link
    link.execute("DEL", *[f"each:{n}" for n in range(7)])
    link.execute("SET", "each:4", 10)
    assert link.run_each("count_run", [([f"each:{n}"], []) for n in range(7)]) == [1, 1, 1, 1, 11, 1, 1]
    assert link.run_each("count_run", []) == []


@pytest.mark.redis
def test_per_call_commands_need_no_pooled_connection_and_the_rest_wait_for_one_within_the_timeout(redis_stores):
    store = redis_stores(MCP_REDIS_POOL_SIZE=1, MCP_REDIS_TIMEOUT_S=0.2)
    session = new_session(store)
    held = store.link.client.connection_pool.get_connection()
    try:
        # The per-call commands share the multiplexed connection: an exhausted pool does not stop them.
        assert store.sessions.peek_session(session.id) is not None
        assert store.sessions.take_call_slot(session.id, 1) is not None
        store.sessions.update_session(session.id, SessionChange(assign={"log_level": "warning"}))
        # redis-py's own path (the refresher's batch of lease renewals) waits for a pooled connection, and gives up
        # in time.
        started = time.monotonic()
        with pytest.raises(StoreUnavailable):
            store.sessions.renew_call_leases()
        assert time.monotonic() - started < 2
    finally:
        store.link.client.connection_pool.release(held)
    store.sessions.renew_call_leases()


@pytest.mark.redis
def test_a_slot_given_back_is_free_before_the_answer_arrives(redis_stores):
    worker, other = redis_stores(), redis_stores()
    session = new_session(worker)
    stream = other.events.subscribe(session.id)
    calls = call_slots_key(session.id)
    seen_running: list[int] = []

    def call(n: int) -> None:
        token = worker.sessions.take_call_slot(session.id, 1)
        assert token is not None
        worker.sessions.give_back_call_slot(session.id, token)
        assert worker.link.client.zcard(calls) == 0  # free before the answer is stored
        worker.events.deliver(session.id, message(n))

    for n in range(20):
        gevent.spawn(call, n).join()
        event = stream.get(5)
        assert event is not None
        seen_running.append(other.link.client.zcard(calls))
    # Every answer arrived after its slot was free, so a limit of 1 took all 20 calls one after another.
    assert seen_running == [0] * 20
    stream.close()
    assert numbers(drain(worker.events.subscribe(session.id, "0"))) == list(range(20))  # each stored exactly once


@pytest.mark.redis
def test_the_lean_path_reports_redis_gone_as_unavailable_and_recovers(redis_stores, redis_server):  # noqa: F811
    store = redis_stores(MCP_REDIS_TIMEOUT_S=0.5)
    session = new_session(store)
    redis_server.stop()
    try:
        with pytest.raises(StoreUnavailable):
            store.sessions.peek_session(session.id)
        with pytest.raises(StoreUnavailable):
            store.events.publish(session.id, message(0))
    finally:
        redis_server.start()
    # Pooled connections Redis closed are reconnected before use: the first command after the restart succeeds.
    assert store.sessions.peek_session(session.id) is None  # the restarted Redis kept nothing
    assert store.events.publish(session.id, message(0)) is None  # a session it does not know takes no event

"""The Redis hub's command interface (hub/redis_link.py) and the call slot freed in the answer's round trip.

redis-py's implementation (TLS, Unix sockets, Sentinel, Cluster) must keep the hub's guarantees as the multiplexer
does: what goes ahead runs first, a posted error reply raises nothing, a script Redis forgot runs once, a call
slot given back with answer_follows is free before the answer can be seen, exactly once, and a greenlet that
never stores its answer still frees its slot.
"""

from __future__ import annotations

import time

import gevent
import pytest
import redis

from flask_mcp_gevent.hub import HubUnavailable
from flask_mcp_gevent.hub.redis_connection import CooperativeConnection
from flask_mcp_gevent.hub.redis_keys import call_slots_key
from flask_mcp_gevent.hub.redis_link import RedisPyCommands, commands_for
from flask_mcp_gevent.hub.redis_multiplex import Multiplexer, pack
from flask_mcp_gevent.session import SessionChange
from tests.redis_server import redis_server  # noqa: F401  (fixture)
from tests.support.hubs import drain, message, new_session, numbers
from tests.support.waiting import wait_until


def test_pack_writes_the_redis_protocol_for_text_bytes_and_integers():
    assert pack(("SET", b"k\r\n", 42, "é")) == b"*4\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$2\r\n42\r\n$2\r\n\xc3\xa9\r\n"


@pytest.mark.parametrize("value", [True, None])
def test_pack_refuses_values_redis_py_would_not_send_as_they_are(value):
    with pytest.raises(TypeError):
        pack(("SET", "k", value))


def test_only_a_plain_blocking_pool_of_gevent_sockets_gets_the_multiplexer():
    plain = redis.Redis(connection_pool=redis.BlockingConnectionPool(connection_class=CooperativeConnection))
    assert isinstance(commands_for(plain), Multiplexer)
    assert isinstance(commands_for(redis.Redis(connection_pool=redis.BlockingConnectionPool())), RedisPyCommands)
    assert isinstance(commands_for(redis.Redis(connection_pool=redis.ConnectionPool())), RedisPyCommands)


@pytest.mark.redis
def test_redis_py_commands_reply_as_redis_py_and_run_what_goes_ahead_first(redis_server):  # noqa: F811
    client = redis.Redis(connection_pool=redis.BlockingConnectionPool.from_url(redis_server.url, max_connections=1))
    commands = commands_for(client)
    assert commands.execute("SET", "k", b"v", before=(("SET", "ahead", "1"),))
    assert commands.execute("GET", "k") == b"v" and client.get("ahead") == b"1"
    assert commands.execute("GET", "missing") is None
    with pytest.raises(redis.ResponseError):
        commands.execute("INCR", "k")  # not a number
    assert commands.execute("ECHO", "next") == b"next"  # the one connection went back with nothing unread


@pytest.mark.redis
def test_posted_commands_on_redis_py_run_and_an_error_reply_raises_nothing(redis_server):  # noqa: F811
    client = redis.Redis(connection_pool=redis.BlockingConnectionPool.from_url(redis_server.url, max_connections=1))
    commands = commands_for(client)
    client.set("text", "not a number")
    number = commands.post_nowait([("SET", "posted", "1"), ("INCR", "text")])
    assert commands.written(number)  # written by the time it returns
    assert client.get("posted") == b"1"
    done: list[BaseException | None] = []
    script = client.register_script("return redis.error_reply('no way')")
    commands.post_script(script, [], [], (), done.append)
    assert isinstance(done[0], redis.ResponseError)
    assert commands.execute("ECHO", "next") == b"next"


@pytest.mark.redis
def test_a_script_redis_forgot_is_loaded_and_runs_once(redis_server):  # noqa: F811
    client = redis.Redis(connection_pool=redis.BlockingConnectionPool.from_url(redis_server.url))
    commands = commands_for(client)
    script = client.register_script("return redis.call('INCR', KEYS[1])")
    client.delete("runs")
    client.script_flush()
    assert commands.run(script, ["runs"], [], before=(("SET", "before", "1"),)) == 1
    assert client.get("runs") == b"1" and client.get("before") == b"1"


@pytest.mark.redis
def test_per_call_commands_need_no_pooled_connection_and_the_rest_wait_for_one_within_the_timeout(redis_hubs):
    hub = redis_hubs(MCP_REDIS_POOL_SIZE=1, MCP_REDIS_TIMEOUT_S=0.2)
    session = new_session(hub)
    held = hub.client.connection_pool.get_connection()
    try:
        # The per-call commands share the multiplexed connection: an exhausted pool does not stop them.
        assert hub.peek_session(session.id) is not None
        assert hub.take_call_slot(session.id, 1) is not None
        hub.update_session(session.id, SessionChange(assign={"log_level": "warning"}))
        # redis-py's own path (the refresher's batch of lease renewals) waits for a pooled connection, and gives up
        # in time.
        started = time.monotonic()
        with pytest.raises(HubUnavailable):
            hub.call_slots.renew_call_leases()
        assert time.monotonic() - started < 2
    finally:
        hub.client.connection_pool.release(held)
    hub.call_slots.renew_call_leases()


@pytest.mark.redis
def test_a_slot_given_back_with_its_answer_is_free_before_the_answer_arrives(redis_hubs):
    worker, other = redis_hubs(), redis_hubs()
    session = new_session(worker)
    stream = other.subscribe(session.id)
    calls = call_slots_key(session.id)
    seen_running: list[int] = []

    def call(n: int) -> None:
        token = worker.take_call_slot(session.id, 1)
        assert token is not None
        worker.give_back_call_slot(session.id, token, answer_follows=True)
        assert worker.client.zcard(calls) == 1  # not sent yet: it goes with the answer
        worker.deliver(session.id, message(n))

    for n in range(20):
        gevent.spawn(call, n).join()
        event = stream.get(5)
        assert event is not None
        seen_running.append(other.client.zcard(calls))
    # Every answer arrived after its slot was free, so a limit of 1 took all 20 calls one after another.
    assert seen_running == [0] * 20
    stream.close()
    assert numbers(drain(worker.subscribe(session.id, "0"))) == list(range(20))  # each stored exactly once


@pytest.mark.redis
def test_a_call_that_stores_no_answer_still_frees_its_slot(redis_hubs):
    worker = redis_hubs()
    session = new_session(worker)

    def cancelled_call() -> None:
        token = worker.take_call_slot(session.id, 1)
        worker.give_back_call_slot(session.id, token, answer_follows=True)
        # Cancelled: the answer that would have carried the release never comes; the dispatcher says it is done.
        worker.free_held_slot()

    gevent.spawn(cancelled_call).join()
    assert wait_until(lambda: worker.client.zcard(call_slots_key(session.id)) == 0)
    assert worker.take_call_slot(session.id, 1) is not None
    assert not worker.link.ahead  # nothing left waiting


@pytest.mark.redis
def test_the_lean_path_reports_redis_gone_as_unavailable_and_recovers(redis_hubs, redis_server):  # noqa: F811
    hub = redis_hubs(MCP_REDIS_TIMEOUT_S=0.5)
    session = new_session(hub)
    redis_server.stop()
    try:
        with pytest.raises(HubUnavailable):
            hub.peek_session(session.id)
        with pytest.raises(HubUnavailable):
            hub.publish(session.id, message(0))
    finally:
        redis_server.start()
    # Pooled connections Redis closed are reconnected before use: the first command after the restart succeeds.
    assert hub.peek_session(session.id) is None  # the restarted Redis kept nothing
    assert hub.publish(session.id, message(0)) is None  # a session it does not know takes no event

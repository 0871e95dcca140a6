"""The Redis hub's lean command path (hub/redis_commands.py).

The lean path must say to Redis what redis-py would, use the same bounded pool, and never put a connection back
dirty.
"""

from __future__ import annotations

import pytest
import redis

from mcp_server.hub import HubUnavailable
from mcp_server.hub.redis_commands import LeanCommands, lean_commands, pack
from tests.redis_server import redis_server  # noqa: F401  (fixture)
from tests.support.hubs import message, new_session


def test_pack_writes_the_redis_protocol_for_text_bytes_and_integers():
    assert pack(("SET", b"k\r\n", 42, "é")) == b"*4\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$2\r\n42\r\n$2\r\n\xc3\xa9\r\n"


@pytest.mark.parametrize("value", [True, 1.5, None])
def test_pack_refuses_values_redis_py_would_not_send_as_they_are(value):
    with pytest.raises(TypeError):
        pack(("SET", "k", value))


def test_only_a_plain_blocking_pool_gets_the_lean_path():
    plain = redis.Redis(connection_pool=redis.BlockingConnectionPool())
    assert isinstance(lean_commands(plain), LeanCommands)
    assert lean_commands(redis.Redis(connection_pool=redis.ConnectionPool())) is None
    assert lean_commands(object()) is None


@pytest.mark.redis
def test_lean_replies_match_redis_py_and_an_error_reply_leaves_the_connection_clean(redis_server):  # noqa: F811
    client = redis.Redis(connection_pool=redis.BlockingConnectionPool.from_url(redis_server.url, max_connections=1))
    lean = lean_commands(client)
    assert lean.execute("SET", "k", b"v") == b"OK"
    assert lean.execute("GET", "k") == b"v"
    assert lean.execute("GET", "missing") is None
    with pytest.raises(redis.ResponseError):
        lean.execute("INCR", "k")  # not a number
    # The one connection went back with nothing unread: the next reply is its own command's.
    assert lean.pipeline([("DEL", "n"), ("INCR", "n"), ("INCR", "n")]) == [0, 1, 2]
    assert client.get("k") == b"v"  # redis-py's own path shares the pool and still works


@pytest.mark.redis
def test_a_script_redis_forgot_is_loaded_and_runs_once(redis_server):  # noqa: F811
    client = redis.Redis(connection_pool=redis.BlockingConnectionPool.from_url(redis_server.url))
    lean = lean_commands(client)
    script = client.register_script("return redis.call('INCR', KEYS[1])")
    client.delete("runs")
    client.script_flush()
    assert lean.evalsha(script, ["runs"], [], before=(("SET", "before", "1"),)) == 1
    assert client.get("runs") == b"1" and client.get("before") == b"1"


@pytest.mark.redis
def test_a_pool_with_every_connection_out_answers_unavailable_within_its_timeout(redis_hubs):
    hub = redis_hubs(MCP_REDIS_POOL_SIZE=1, MCP_REDIS_TIMEOUT_S=0.2)
    session = new_session(hub)
    held = hub.client.connection_pool.get_connection()
    try:
        with pytest.raises(HubUnavailable):
            hub.peek_session(session.id)
    finally:
        hub.client.connection_pool.release(held)
    assert hub.peek_session(session.id) is not None


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

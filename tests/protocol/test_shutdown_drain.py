"""A worker told to stop: calls in flight get half of graceful_timeout, the rest are answered -32004, once each."""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.encoding import loads
from flask_mcp_gevent.errors import SERVER_UNAVAILABLE
from flask_mcp_gevent.server import CALL_STOPPED_MESSAGE
from flask_mcp_gevent.store.redis import session_keys
from flask_mcp_gevent.subscription import StreamClosed
from tests.protocol.blocking_call import RELEASE, blocking_rpc, start_call
from tests.protocol.conftest import Rpc
from tests.redis_server import RedisServer

WAIT_S = 10.0
# One second of graceful_timeout: calls in flight get half of it.
STOPPING = {"MCP_GRACEFUL_TIMEOUT_S": "1"}


@pytest.fixture
def rpc(make_server) -> Rpc:
    """An initialized session of a server whose only tool blocks, with a one-second graceful_timeout."""
    client = blocking_rpc(make_server, STOPPING)
    yield client
    RELEASE.set()


def test_a_call_past_the_grace_is_answered_with_the_shutdown_error_as_its_own_response(rpc):
    answers: list = []
    call = start_call(rpc, 7, answers.append)
    rpc.server.shutdown()
    assert rpc.server.drain() == 1
    stopped = {"jsonrpc": "2.0", "id": 7, "error": {"code": SERVER_UNAVAILABLE, "message": CALL_STOPPED_MESSAGE}}
    # The greenlet's value is what a POST answers with; on_done is what a legacy session's stream gets.
    assert call.value == stopped
    assert answers == [stopped]


def test_a_call_that_ends_within_the_grace_keeps_its_result(rpc):
    answers: list = []
    call = start_call(rpc, 8, answers.append)
    rpc.server.shutdown()
    gevent.spawn_later(0.05, RELEASE.set)
    assert rpc.server.drain() == 0
    assert call.value["result"]["content"] == [{"type": "text", "text": "released"}]
    assert answers == [call.value]


def test_draining_twice_at_once_answers_each_stopped_call_once(rpc):
    answers: list = []
    call = start_call(rpc, 9, answers.append)
    rpc.server.shutdown()
    # gunicorn drains from the stop watcher and again from worker_exit; a second stop must not cut the answer.
    drains = [gevent.spawn(rpc.server.drain), gevent.spawn(rpc.server.drain)]
    gevent.joinall(drains, timeout=WAIT_S)
    assert sorted(drain.value for drain in drains) == [0, 1]
    assert call.value["error"]["code"] == SERVER_UNAVAILABLE
    assert answers == [call.value]


def test_a_stream_attached_after_shutdown_ends_after_what_it_missed(rpc):
    rpc.server.publish(rpc.session.id, {"jsonrpc": "2.0", "method": "notifications/message",
                                        "params": {"level": "info", "data": "kept"}})
    rpc.server.shutdown()
    stream = rpc.server.subscribe(rpc.session.id, last_event_id="0")
    event_id, data = stream.get(WAIT_S)
    assert b'"kept"' in data
    with pytest.raises(StreamClosed, match="server shutting down"):
        stream.get(WAIT_S)


@pytest.mark.redis
def test_the_drain_waits_for_legacy_answers_the_redis_store_is_still_storing(make_server):
    with RedisServer() as redis:
        client = blocking_rpc(make_server, {**STOPPING, "MCP_GRACEFUL_TIMEOUT_S": "4", "MCP_REDIS_URL": redis.url,
                                            "MCP_REDIS_TIMEOUT_S": "0.3"})
        server = client.server
        # As the legacy transport does: the call's greenlet stores the answer, retrying while Redis is paused.
        start_call(client, 10, lambda answer: server.deliver(client.session.id, answer))
        redis.pause()
        try:
            server.shutdown()
            gevent.spawn_later(0.05, RELEASE.set)
            gevent.spawn_later(0.6, redis.resume)
            assert server.drain() == 0
            assert server.calls.answers_storing == 0, "the drain returned before the answer was stored"
        finally:
            redis.resume()
        replay = redis.client().xrange(session_keys(client.session.id).replay)
        assert [loads(fields[b"d"])["id"] for _, fields in replay] == [10]

"""EventLog.deliver: an acknowledged answer is stored once through a stalled store, or given up loudly past the
bound."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gevent
import pytest

from flask_mcp_gevent.config import ConfigError, Settings
from flask_mcp_gevent.store import redis_multiplex
from flask_mcp_gevent.store.redis import RedisStore, session_keys
from flask_mcp_gevent.store.redis_events import RedisEvents
from flask_mcp_gevent.store.redis_keys import delivery_key
from tests.redis_server import RedisServer, redis_server  # noqa: F401  (fixture)
from tests.support.stores import new_session, queued_commands, take

EARLIER = {"jsonrpc": "2.0", "id": 6, "result": {}}
ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {}}


@contextmanager
def stalling_store(retry_s: float) -> Iterator[tuple[RedisServer, RedisStore]]:
    """A Redis of its own and a store with a short command timeout, so a paused Redis fails each attempt quickly;
    afterwards Redis is resumed and the store stopped."""
    with RedisServer() as server:
        stalling = RedisStore(Settings.from_mapping({"MCP_REDIS_URL": server.url, "MCP_REDIS_TIMEOUT_S": "0.3",
                                                   "MCP_DELIVERY_RETRY_S": str(retry_s)}))
        try:
            yield server, stalling
        finally:
            server.resume()
            stalling.stop()


@contextmanager
def delivery_tokens(events: RedisEvents) -> Iterator[list[str | None]]:
    """The token each of deliver's attempts publishes with, meanwhile (each attempt still runs as it would)."""
    tokens: list[str | None] = []
    publish = events.publish

    def recorded(session_id: str, message: Any, stream: str | None = None, token: str | None = None) -> str | None:
        tokens.append(token)
        return publish(session_id, message, stream, token)

    events.publish = recorded
    try:
        yield tokens
    finally:
        del events.publish


def replayed(server: RedisServer, session_id: str) -> list[bytes]:
    """Every answer in the session's replay log, oldest first."""
    return [fields[b"d"] for _, fields in server.client().xrange(session_keys(session_id).replay)]


def given_up_line(session_id: str) -> str:
    """The ERROR line of an answer given up past MCP_DELIVERY_RETRY_S=0.5."""
    return (f"gave up storing the answer to request 7 of session {session_id[:8]}: the session store stayed "
            "unreachable for MCP_DELIVERY_RETRY_S (0.5 s); the client may never get it")


def test_a_delivered_answer_reaches_the_stream_once(store):  # noqa: F811
    session = new_session(store)
    subscription = store.events.subscribe(session.id)
    event_id = store.events.deliver(session.id, ANSWER)
    assert event_id is not None
    assert take(subscription, 2, timeout=1.0) == [(event_id, b'{"jsonrpc":"2.0","id":7,"result":{}}')]
    subscription.close()


@pytest.mark.redis
def test_an_answer_delivered_through_a_stall_is_stored_exactly_once():
    with stalling_store(retry_s=20) as (server, stalling):
        session = new_session(stalling)
        # Redis knows the script now, so an attempt that times out still runs when Redis resumes.
        assert stalling.events.deliver(session.id, EARLIER) is not None
        server.pause()
        # The first attempt reaches the frozen Redis and times out; it runs once Redis resumes, and so
        # does the retry that follows: only one of them may append the answer.
        gevent.spawn_later(1.5, server.resume)
        started = time.monotonic()
        assert stalling.events.deliver(session.id, ANSWER) is not None
        assert time.monotonic() - started > 1.0, "the store was paused: the answer cannot have been stored"
        assert replayed(server, session.id) == [b'{"jsonrpc":"2.0","id":6,"result":{}}',
                                                b'{"jsonrpc":"2.0","id":7,"result":{}}']


@pytest.mark.redis
def test_an_answer_is_given_up_with_an_error_log_past_the_bound(store_log):  # noqa: F811
    with stalling_store(retry_s=0.5) as (server, stalling):
        session = new_session(stalling)
        server.pause()
        assert stalling.events.deliver(session.id, ANSWER) is None
    assert [r.getMessage() for r in store_log if r.levelname == "ERROR"] == [given_up_line(session.id)]


def test_a_negative_delivery_retry_is_refused_at_start():
    with pytest.raises(ConfigError, match="MCP_DELIVERY_RETRY_S must be 0"):
        Settings.from_environ({"MCP_DELIVERY_RETRY_S": "-1"})


@pytest.mark.redis
def test_delivery_tokens_differ_across_calls_and_across_workers(redis_server):  # noqa: F811
    workers = [RedisStore(Settings.from_mapping({"MCP_REDIS_URL": redis_server.url})) for _ in range(2)]
    try:
        tokens: list[str | None] = []
        for worker in workers:
            session = new_session(worker)
            with delivery_tokens(worker.events) as used:
                for n in range(500):
                    assert worker.events.deliver(session.id, {**ANSWER, "id": n}) is not None
            tokens += used
        assert len(tokens) == 1000 and None not in tokens
        # A token shared by two deliveries would let the second be taken for a retry of the first, and dropped.
        assert len(set(tokens)) == 1000
    finally:
        for worker in workers:
            worker.stop()


@pytest.mark.redis
def test_an_answer_delivered_to_a_redis_that_forgot_the_script_is_stored_once(redis_server):  # noqa: F811
    store = RedisStore(Settings.from_mapping({"MCP_REDIS_URL": redis_server.url}))
    try:
        session = new_session(store)
        assert store.events.deliver(session.id, EARLIER) is not None
        redis_server.client().script_flush()  # a restarted Redis: the EVALSHA gets NOSCRIPT
        assert store.events.deliver(session.id, ANSWER) is not None
        assert replayed(redis_server, session.id) == [b'{"jsonrpc":"2.0","id":6,"result":{}}',
                                                      b'{"jsonrpc":"2.0","id":7,"result":{}}']
    finally:
        store.stop()


@pytest.mark.redis
@pytest.mark.parametrize("stream", [None, "req-1"], ids=["session-stream", "request-stream"])
def test_a_delivered_answer_is_one_deliver_script_run_that_remembers_its_token(redis_server, stream):  # noqa: F811
    store = RedisStore(Settings.from_mapping({"MCP_REDIS_URL": redis_server.url}))
    try:
        session = new_session(store)
        assert store.events.deliver(session.id, EARLIER, stream) is not None  # connected, the script loaded
        with delivery_tokens(store.events) as tokens, queued_commands(store) as sent:
            assert store.events.deliver(session.id, ANSWER, stream) is not None
        assert len(tokens) == 1
        keys, args = store.events.publish_arguments(session.id, ANSWER, stream)
        # What a generic packer makes of EVALSHA, the SHA, the key count, the keys, the token's and the arguments.
        assert sent == [(redis_multiplex.pack(("EVALSHA", store.link.scripts["deliver"].sha, len(keys) + 1, *keys,
                                          delivery_key(session.id, tokens[0]), *args,
                                          store.events.remember_ms_arg)), 1)]
        assert replayed(redis_server, session.id) == [b'{"jsonrpc":"2.0","id":6,"result":{}}',
                                                      b'{"jsonrpc":"2.0","id":7,"result":{}}']
        assert redis_server.client().exists(delivery_key(session.id, tokens[0]))  # remembered for its retries
    finally:
        store.stop()

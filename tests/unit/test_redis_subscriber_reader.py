"""SubscriberReader (the subscriber socket read directly): nothing behind the confirmations lost, silence seen."""

from __future__ import annotations

import time

import gevent
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.store import redis_listener
from flask_mcp_gevent.store.redis_connection import CooperativeConnection
from flask_mcp_gevent.store.redis_keys import CONTROL_CHANNEL, WORKER_CHANNEL
from flask_mcp_gevent.store.redis_listener import SubscriberReader
from tests.support.stores import new_session, serve
from tests.support.waiting import kill_redis_clients, wait_until

pytestmark = pytest.mark.redis


@pytest.fixture
def readers(redis_server):
    """SubscriberReaders on fresh connections made as the store makes its subscriber's."""
    connections: list[CooperativeConnection] = []

    def make(timeout_s: float = 2.0) -> SubscriberReader:
        connection = CooperativeConnection(host="127.0.0.1", port=redis_server.port, socket_timeout=timeout_s,
                                           socket_connect_timeout=timeout_s, protocol=2)
        connection.connect()
        connections.append(connection)
        return SubscriberReader(connection)

    yield make
    for connection in connections:
        connection.disconnect()


def publish_once_subscribed(reader: SubscriberReader, server, channels: list[str],
                            messages: list[tuple[str, str]]) -> list[bool]:
    """Make reader.send, after sending SUBSCRIBE, wait (holding the loop) until Redis counts the subscribers and
    publish messages from another connection: they reach the socket before the reader reads the confirmations."""
    admin = server.client()
    original = reader.send
    published: list[bool] = []

    def send(*command):
        original(*command)
        if command[0] != "SUBSCRIBE":
            return
        deadline = time.monotonic() + 5
        while dict(admin.pubsub_numsub(*channels)) != {channel.encode(): 1 for channel in channels}:
            assert time.monotonic() < deadline, "Redis never counted the subscription"
            time.sleep(0.005)  # a blocking sleep: the reader's greenlet must not read yet
        for channel, data in messages:
            assert admin.publish(channel, data) == 1
        published.append(True)

    reader.send = send  # type: ignore[method-assign]
    return published


def collect(reader: SubscriberReader, count: int, timeout: float = 2.0) -> list:
    """Replies until count have arrived, or until one wait of timeout passes in silence."""
    found: list = []
    while len(found) < count:
        replies = reader.replies(timeout)
        if replies is None:
            break
        found += replies
    return found


def test_messages_published_right_behind_the_confirmations_are_kept(readers, redis_server):
    reader = readers()
    published = publish_once_subscribed(reader, redis_server, ["a", "b"], [("a", "one"), ("b", "two"), ("a", "3")])
    reader.subscribe("a", "b")
    assert published == [True]
    # Messages that came in the confirmations' read wait for the next replies(); Redis may write the last ones to
    # the socket a moment later, so they are collected over as many reads as they took.
    assert collect(reader, 3, 0.5) == [[b"message", b"a", b"one"], [b"message", b"b", b"two"],
                                       [b"message", b"a", b"3"]]
    assert reader.replies(0.2) is None  # nothing twice


def test_confirmations_and_messages_split_across_many_reads_are_all_seen(readers, redis_server, monkeypatch):
    monkeypatch.setattr(redis_listener, "READ_SIZE", 7)  # every reply arrives in pieces
    reader = readers()
    publish_once_subscribed(reader, redis_server, ["first", "second"], [("second", "x" * 40), ("first", "y")])
    reader.subscribe("first", "second")
    assert collect(reader, 2) == [[b"message", b"second", b"x" * 40], [b"message", b"first", b"y"]]


def test_a_quiet_connection_gives_none_after_the_timeout_and_still_reads_after(readers, redis_server):
    reader = readers()
    reader.subscribe("quiet")
    started = time.monotonic()
    assert reader.replies(0.3) is None
    assert 0.25 <= time.monotonic() - started < 1.5
    assert redis_server.client().publish("quiet", "hello") == 1
    assert reader.replies(2.0) == [[b"message", b"quiet", b"hello"]]


def test_a_ping_on_a_subscribed_connection_is_answered(readers):
    reader = readers()
    reader.subscribe("c")
    reader.send("PING")
    assert reader.replies(2.0) == [[b"pong", b""]]


def test_redis_closing_the_subscriber_connection_raises_connection_error(readers, redis_server):
    reader = readers()
    reader.subscribe("doomed")
    kill_redis_clients(redis_server.client(), "the subscribed connection to be killed", _type="pubsub")
    with pytest.raises(RedisConnectionError):
        reader.replies(2.0)


def test_subscribe_gives_up_when_redis_does_not_confirm_within_the_socket_timeout(readers, redis_server):
    reader = readers(timeout_s=0.3)
    redis_server.client().execute_command("CLIENT", "PAUSE", 1000, "ALL")
    paused_until = time.monotonic() + 1.0
    try:
        started = time.monotonic()
        with pytest.raises(RedisTimeoutError):
            reader.subscribe("never")
        assert time.monotonic() - started < 0.9
    finally:
        gevent.sleep(max(0.0, paused_until - time.monotonic()) + 0.1)


def test_a_control_command_right_behind_a_resubscription_is_obeyed(redis_stores, redis_server, monkeypatch):
    worker = redis_stores()
    session = new_session(worker)
    server = serve(worker)
    assert wait_until(worker.fleet.ready)
    running = gevent.spawn(gevent.sleep, 30)
    server.calls.add(session.id, "req-1", running)
    admin = redis_server.client()
    channels = [CONTROL_CHANNEL, WORKER_CHANNEL + worker.link.worker_id]
    cancel = dumps({"op": "cancel", "session": session.id, "request": "req-1", "origin": "another-worker"})
    original = SubscriberReader.send
    published: list[bool] = []

    def send(self, *command):
        original(self, *command)
        if command[0] == "SUBSCRIBE" and not published:
            # The new subscription counted, the command is published before this worker reads the confirmations.
            deadline = time.monotonic() + 5
            while dict(admin.pubsub_numsub(channels[1])) != {channels[1].encode(): 1}:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            assert admin.publish(CONTROL_CHANNEL, cancel) == 1
            published.append(True)

    monkeypatch.setattr(SubscriberReader, "send", send)
    # The worker's subscriber connection: it subscribes again.
    kill_redis_clients(admin, "the worker's subscriber connection to be killed", _type="pubsub")
    running.join(5)
    assert published == [True]
    assert running.dead  # the cancel was heard: nothing but pub/sub carries it, no replay log would bring it back


def test_a_quiet_subscriber_connection_pings_and_is_kept(redis_stores, redis_server, monkeypatch):
    monkeypatch.setattr(redis_listener, "LISTEN_PING_S", 0.1)
    monkeypatch.setattr(redis_listener, "LISTEN_DEAD_S", 0.5)
    worker = redis_stores()
    assert wait_until(worker.fleet.ready)
    name = "mcp-" + worker.link.worker_id

    def subscriber() -> dict:
        (found,) = [client for client in redis_server.client().client_list()
                    if client.get("name") == name and client.get("sub") != "0"]
        return found

    first = subscriber()
    gevent.sleep(1.0)  # twice the silence that counts as dead, were the pings not answered
    later = subscriber()
    assert later["id"] == first["id"]
    assert later["cmd"] == "ping"

"""What only the Redis store has: several workers on one Redis, keys that expire in Redis, Redis going away.

Each worker is a RedisStore instance with its own subscriber connection, on a shared
redis-server; a test that needs what a worker holds (the calls it runs, the answers its tools wait
for) builds a Server over it (tests/support/stores.serve). The behaviour both backends share is in
test_store_contract.py.
"""

from __future__ import annotations

import json
import time

import gevent
import pytest

from flask_mcp_gevent.conditions import StoreUnavailable, StreamConflict
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.session import SessionChange
from flask_mcp_gevent.store.redis import RedisStore, session_keys
from flask_mcp_gevent.subscription import StreamClosed
from tests.redis_server import RedisServer, redis_server  # noqa: F401  (fixture)
from tests.support.store_seam import streaming_session_ids
from tests.support.stores import ask, drain, message, new_session, numbers, serve, take
from tests.support.waiting import kill_redis_clients, wait_until

pytestmark = pytest.mark.redis


def test_slow_consumer_queue_is_dropped_at_once(redis_stores):
    store = redis_stores(MCP_QUEUE_MAX=3)
    session = new_session(store)
    subscription = store.events.subscribe(session.id)
    for n in range(10):
        store.events.publish(session.id, message(n))
    # The stalled client never reads again, so nothing may wait for it to.
    assert wait_until(lambda: subscription.reason == "slow consumer")
    assert session.id not in streaming_session_ids(store)
    assert subscription.queue.qsize() <= 1  # only the close marker is left
    # What it missed stays in the replay log for when it reconnects.
    subscription.close()
    assert numbers(drain(store.events.subscribe(session.id))) == list(range(10))


def test_message_published_on_one_worker_reaches_the_stream_on_another(redis_stores):
    worker_a, worker_b = redis_stores(), redis_stores()
    session = new_session(worker_a)
    subscription = worker_a.events.subscribe(session.id)
    assert wait_until(lambda: worker_b.sessions.get_session(session.id))
    for n in range(20):
        worker_b.events.publish(session.id, message(n))
    assert numbers(take(subscription, 20)) == list(range(20))
    # Nothing repeated: an event published behind them is the next (and last) one to arrive.
    worker_b.events.publish(session.id, message(20))
    assert numbers(drain(subscription)) == [20]
    subscription.close()


def test_request_stream_resumed_on_another_worker_gets_events_published_here(redis_stores):
    worker_a, worker_b = redis_stores(), redis_stores()
    session = new_session(worker_a)
    first = worker_a.events.publish(session.id, message(0), stream="req1")
    resumed = worker_b.events.subscribe(session.id, last_event_id=first)
    assert wait_until(worker_b.fleet.ready)
    for n in range(1, 4):
        worker_a.events.publish(session.id, message(n), stream="req1")
    assert numbers(take(resumed, 3)) == [1, 2, 3]
    resumed.close()


def test_exclusive_stream_conflicts_across_workers(redis_stores):
    worker_a, worker_b = redis_stores(), redis_stores()
    session = new_session(worker_a)
    first = worker_a.events.subscribe(session.id, exclusive=True)
    assert wait_until(worker_a.fleet.ready)
    with pytest.raises(StreamConflict):
        worker_b.events.subscribe(session.id, exclusive=True)
    first.close()
    worker_b.events.subscribe(session.id, exclusive=True).close()


def test_stream_claimed_by_a_dead_worker_does_not_block_a_new_one(redis_stores, redis_server):  # noqa: F811
    worker = redis_stores()
    session = new_session(worker)
    # A claim left by a worker that was killed: nobody listens on its channel any more.
    redis_server.client().set(session_keys(session.id).claim, "deadbeefdeadbeef|0123", px=20000)
    subscription = worker.events.subscribe(session.id, exclusive=True)
    worker.events.publish(session.id, message(1))
    assert numbers(drain(subscription)) == [1]
    subscription.close()


def test_stream_on_another_worker_is_replaced_and_told_why(redis_stores):
    worker_a, worker_b = redis_stores(), redis_stores()
    session = new_session(worker_a)
    first = worker_a.events.subscribe(session.id)
    assert wait_until(worker_a.fleet.ready)
    second = worker_b.events.subscribe(session.id)
    with pytest.raises(StreamClosed) as closed:
        first.get(3.0)
    assert "replaced" in closed.value.reason
    worker_a.events.publish(session.id, message(1))
    assert numbers(drain(second)) == [1]
    assert streaming_session_ids(worker_a) == []
    first.close()
    second.close()


def test_closing_a_session_on_one_worker_ends_its_stream_on_another(redis_stores):
    worker_a, worker_b = redis_stores(), redis_stores()
    session = new_session(worker_a)
    subscription = worker_a.events.subscribe(session.id)
    assert wait_until(worker_a.fleet.ready)
    assert worker_b.sessions.close_session(session.id) is True
    with pytest.raises(StreamClosed) as closed:
        subscription.get(3.0)
    assert closed.value.reason == "session closed"


def test_answer_posted_to_another_worker_wakes_the_waiting_tool(redis_stores):
    worker_a, worker_b = redis_stores(), redis_stores()
    session = new_session(worker_a)
    subscription = worker_a.events.subscribe(session.id)
    server_a, server_b = serve(worker_a), serve(worker_b)
    assert wait_until(lambda: worker_a.fleet.ready() and worker_b.fleet.ready())
    waiter = gevent.spawn(ask, server_a, session, "sampling/createMessage", {}, 10.0)
    request = json.loads(subscription.get(3.0)[1])
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"role": "assistant"}}
    assert server_b.resolve(session.id, answer) is True
    assert waiter.get(timeout=5.0)["result"] == {"role": "assistant"}
    subscription.close()


def test_cancel_on_another_worker_kills_the_request_running_here(redis_stores):
    worker_a, worker_b = redis_stores(), redis_stores()
    session = new_session(worker_a)
    server_a, server_b = serve(worker_a), serve(worker_b)
    assert wait_until(lambda: worker_a.fleet.ready() and worker_b.fleet.ready())
    running = gevent.spawn(gevent.sleep, 30)
    server_a.calls.add(session.id, "req-1", running)
    server_b.cancel(session.id, "req-1")
    running.join(timeout=3.0)
    assert running.dead


def test_broadcast_reaches_every_session_of_the_fleet_once(redis_stores):
    """From any worker, a broadcast lands once on each session: streaming on any worker, or waiting in its replay."""
    workers = [redis_stores() for _ in range(3)]
    servers = [serve(worker) for worker in workers]
    assert wait_until(lambda: all(worker.fleet.ready() for worker in workers))
    streaming = [new_session(worker) for worker in workers]
    subscriptions = [worker.events.subscribe(session.id) for worker, session in zip(workers, streaming, strict=True)]
    quiet = new_session(workers[0], initialized=True)
    for worker, session in zip(workers, streaming, strict=True):
        worker.sessions.update_session(session.id, SessionChange(assign={"initialized": True}))
    note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    servers[1].announce_list_changed("tool")
    for subscription in subscriptions:
        assert [loads(data) for _, data in drain(subscription)] == [note]
        subscription.close()
    later = workers[2].events.subscribe(quiet.id)
    assert [loads(data) for _, data in drain(later)] == [note]
    later.close()


def test_session_keys_expire_in_redis_after_the_idle_ttl(redis_stores, redis_server):  # noqa: F811
    worker = redis_stores(MCP_SESSION_TTL_S=0.5)
    session = new_session(worker)
    worker.events.publish(session.id, message(1))
    keys = session_keys(session.id)
    client = redis_server.client()
    assert client.exists(keys.session, keys.replay) == 2
    assert wait_until(lambda: client.exists(*keys) == 0, timeout=3.0)


def replay_ttls_ms(client, session_id: str) -> dict[str, int]:
    """The remaining TTL of a session's key and of its replay log's keys."""
    keys = session_keys(session_id)
    return {"session": client.pttl(keys.session), "replay": client.pttl(keys.replay),
            "replay_bytes": client.pttl(keys.replay_bytes)}


def replay_bytes(client, session_id: str) -> tuple[int, int]:
    """The replay log's byte counter, and the sum it should hold: the length of each entry's message."""
    keys = session_keys(session_id)
    return int(client.get(keys.replay_bytes)), sum(len(fields[b"d"]) for _, fields in client.xrange(keys.replay))


def test_the_replay_log_keeps_the_session_s_ttl_as_it_moves(redis_stores, redis_server):  # noqa: F811
    worker = redis_stores(MCP_SESSION_TTL_S=30)
    session = new_session(worker)
    client = redis_server.client()
    worker.events.publish(session.id, message(1))  # a new log takes the session's TTL
    ttls = replay_ttls_ms(client, session.id)
    assert all(0 < ttl <= ttls["session"] + 50 for ttl in ttls.values()), ttls
    for key in session_keys(session.id):  # shorter, so a refresh visibly moves them
        client.pexpire(key, 2_000)
    worker.sessions.ttl_refreshed.clear()
    assert worker.sessions.get_session(session.id) is not None  # refreshes the TTL (the get script)
    worker.events.publish(session.id, message(2))  # a publish to an existing log leaves its TTL alone
    ttls = replay_ttls_ms(client, session.id)
    assert all(25_000 < ttl <= 30_000 for ttl in ttls.values()), ttls
    # A counter that vanished on its own is rebuilt, and takes the session's TTL again.
    client.delete(session_keys(session.id).replay_bytes)
    worker.events.publish(session.id, message(3))
    ttls = replay_ttls_ms(client, session.id)
    assert all(25_000 < ttl <= 30_000 for ttl in ttls.values()), ttls
    assert replay_bytes(client, session.id) == (3 * len(dumps(message(1))),) * 2


def test_a_stream_s_attach_refresh_and_detach_move_the_replay_log_s_ttl_with_the_session_s(
        redis_stores, redis_server):  # noqa: F811
    worker = redis_stores(MCP_SESSION_TTL_S=30, MCP_RESUME_WINDOW_S=5)
    session = new_session(worker)
    client = redis_server.client()
    worker.events.publish(session.id, message(1))
    for key in session_keys(session.id):
        client.pexpire(key, 2_000)
    subscription = worker.events.subscribe(session.id)  # attach: the full idle TTL again
    ttls = replay_ttls_ms(client, session.id)
    assert all(25_000 < ttl <= 30_000 for ttl in ttls.values()), ttls
    for key in session_keys(session.id):
        client.pexpire(key, 2_000)
    worker.claims.refresh()  # the refresher, every few seconds while the stream is open
    ttls = replay_ttls_ms(client, session.id)
    assert all(25_000 < ttl <= 30_000 for ttl in ttls.values()), ttls
    subscription.close()  # detach: the resume window
    assert wait_until(lambda: all(0 < ttl <= 5_000 for ttl in replay_ttls_ms(client, session.id).values()))


def test_closing_a_session_leaves_none_of_its_keys_in_redis(redis_stores, redis_server):  # noqa: F811
    worker = redis_stores()
    session = new_session(worker)
    client = redis_server.client()
    worker.events.publish(session.id, message(1))
    worker.events.subscribe(session.id, "0").close()
    assert client.exists(session_keys(session.id).replay_bytes) == 1
    assert worker.sessions.close_session(session.id) is True
    assert client.keys(session_keys(session.id).session + "*") == []


def test_a_log_keeps_the_newest_replay_max_and_counts_their_bytes(redis_stores, redis_server):  # noqa: F811
    worker = redis_stores(MCP_SESSION_TTL_S=30, MCP_REPLAY_MAX=5)
    session = new_session(worker)
    client = redis_server.client()
    for n in range(12):
        worker.events.publish(session.id, message(n))
    assert client.xlen(session_keys(session.id).replay) == 5
    subscription = worker.events.subscribe(session.id, "0")
    kept = drain(subscription)
    subscription.close()
    assert numbers(kept) == [7, 8, 9, 10, 11]
    assert replay_bytes(client, session.id) == (sum(len(data) for _, data in kept),) * 2
    ttls = replay_ttls_ms(client, session.id)
    assert all(25_000 < ttl <= ttls["session"] + 50 for ttl in ttls.values()), ttls  # a new log took the session's TTL


def padded(n: int, size: int) -> dict:
    """message(n), padded so that its JSON is exactly size bytes."""
    padding = size - len(dumps({**message(n), "pad": ""}))
    return {**message(n), "pad": "x" * padding}


def test_a_lost_byte_counter_is_summed_again_from_the_log_and_the_byte_bound_holds(
        redis_stores, redis_server):  # noqa: F811
    size = len(dumps(message(0)))
    worker = redis_stores(MCP_SESSION_TTL_S=30, MCP_REPLAY_MAX=4, MCP_REPLAY_MAX_BYTES=3 * size + 50)
    session = new_session(worker)
    client = redis_server.client()
    keys = session_keys(session.id)
    for n in range(3):
        worker.events.publish(session.id, message(n))
    client.delete(keys.replay_bytes)  # evicted alone (maxmemory), or expired before the log
    worker.events.publish(session.id, padded(3, size + 40))  # 4 entries, 4 * size + 40 bytes: one too many bytes
    assert replay_bytes(client, session.id) == (3 * size + 40,) * 2
    subscription = worker.events.subscribe(session.id, "0")
    assert numbers(drain(subscription)) == [1, 2, 3]
    subscription.close()
    # A log lost apart from its counter starts again from its one new entry, not from the stale sum.
    client.delete(keys.replay)
    worker.events.publish(session.id, message(4))
    assert replay_bytes(client, session.id) == (size,) * 2


def test_stream_catches_up_after_its_subscriber_connection_drops(redis_stores, redis_server):  # noqa: F811
    worker_a, worker_b = redis_stores(), redis_stores()
    session = new_session(worker_a)
    subscription = worker_a.events.subscribe(session.id)
    assert wait_until(worker_a.fleet.ready)
    client = redis_server.client()
    kill_redis_clients(client, "the worker's subscriber connection to be killed", _type="pubsub", skipme=True)
    for n in range(5):
        worker_b.events.publish(session.id, message(n))
    assert numbers(take(subscription, 5)) == [0, 1, 2, 3, 4]
    # Nothing repeated by the catch-up: an event published behind them is the next (and last) one to arrive.
    worker_b.events.publish(session.id, message(5))
    assert numbers(drain(subscription)) == [5]
    subscription.close()


def test_stream_whose_claim_vanished_takes_it_back_and_catches_up(redis_stores, redis_server):  # noqa: F811
    worker_a, worker_b = redis_stores(), redis_stores()
    session = new_session(worker_a)
    subscription = worker_a.events.subscribe(session.id)
    assert wait_until(worker_a.fleet.ready)
    claim = session_keys(session.id).claim
    redis_server.client().delete(claim)  # as after a Redis restart, or an outage longer than the claim
    worker_b.events.publish(session.id, message(1))  # goes to the replay log only: nobody claims the stream
    worker_a.claims.refresh()
    assert redis_server.client().get(claim).decode() == subscription.owner
    worker_b.events.publish(session.id, message(2))
    assert numbers(take(subscription, 2)) == [1, 2]
    subscription.close()
    assert redis_server.client().exists(claim) == 0


def test_store_fails_fast_while_redis_is_down_and_recovers_by_itself():
    with RedisServer() as server:
        settings = Settings.from_mapping({"MCP_REDIS_URL": server.url, "MCP_REDIS_TIMEOUT_S": "1"})
        store = RedisStore(settings)
        try:
            session = new_session(store)
            assert store.fleet.ready()
            server.stop()
            started = time.monotonic()
            for call in (lambda: store.sessions.get_session(session.id), lambda: new_session(store),
                         lambda: store.events.publish(session.id, message(1))):
                with pytest.raises(StoreUnavailable):
                    call()
            assert time.monotonic() - started < 3.0
            assert wait_until(lambda: not store.fleet.ready(), timeout=5.0)
            server.start()
            assert wait_until(store.fleet.ready, timeout=10.0)
            fresh = new_session(store)  # the data went with the old process (no persistence)
            assert store.sessions.get_session(fresh.id) is not None
        finally:
            store.stop()


def test_store_calls_are_bounded_when_redis_hangs():
    with RedisServer() as server:
        settings = Settings.from_mapping({"MCP_REDIS_URL": server.url, "MCP_REDIS_TIMEOUT_S": "0.5"})
        store = RedisStore(settings)
        try:
            session = new_session(store)
            server.pause()
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                store.sessions.get_session(session.id)
            assert time.monotonic() - started < 2.0
            server.resume()
            assert wait_until(lambda: store.fleet.ready() and store.sessions.get_session(session.id) is not None,
                              timeout=10.0)
        finally:
            server.resume()
            store.stop()

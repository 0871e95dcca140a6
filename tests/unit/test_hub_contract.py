"""The hub contract, checked against both backends: MemoryHub, and RedisHub on a real redis-server.

Every test in the first part runs once per backend, so the two behave the same to
the transports. The second part covers what only Redis has: several workers (two
hub instances sharing one Redis, each with its own subscriber connection), keys
that expire in Redis, and Redis going away and coming back.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import gevent
import pytest

from mcp_server.config import Settings
from mcp_server.encoding import dumps, loads
from mcp_server.errors import REQUEST_TIMEOUT, RpcError
from mcp_server.hub import CapacityError, Hub, HubUnavailable, StreamClosed, StreamConflict
from mcp_server.hub.base import join_event_id
from mcp_server.hub.memory import MemoryHub
from mcp_server.hub.redis import RedisHub, session_keys
from mcp_server.session import Session
from tests.redis_server import RedisServer, redis_server  # noqa: F401  (fixture)

BACKENDS = ["memory", pytest.param("redis", marks=pytest.mark.redis)]


def wait_until(predicate: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Poll predicate cooperatively until it is truthy; return its value (falsy on timeout)."""
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        gevent.sleep(0.02)
        value = predicate()
    return value


def take(subscription, count: int, timeout: float = 5.0) -> list[tuple[str, bytes]]:
    """Read exactly count events, or fewer if the deadline passes first."""
    events: list[tuple[str, bytes]] = []
    deadline = time.monotonic() + timeout
    while len(events) < count and time.monotonic() < deadline:
        item = subscription.get(max(0.01, deadline - time.monotonic()))
        if item is not None:
            events.append(item)
    return events


def drain(subscription, limit: int = 50, timeout: float = 0.2) -> list[tuple[str, bytes]]:
    """Read events until none arrives within timeout."""
    events = []
    for _ in range(limit):
        item = subscription.get(timeout)
        if item is None:
            break
        events.append(item)
    return events


def payloads(events: list[tuple[str, bytes]]) -> list[bytes]:
    """The JSON bytes of each event."""
    return [data for _, data in events]


class Hubs:
    """Builds hubs of one backend with settings overrides, and stops them after the test."""

    def __init__(self, backend: str, server: RedisServer | None) -> None:
        self.backend = backend
        self.server = server
        self.made: list[Hub] = []

    def __call__(self, **overrides: Any) -> Hub:
        """A fresh hub (for redis: a fresh worker on the shared server)."""
        config: dict[str, Any] = {"MCP_RESUME_WINDOW_S": "60", **{k: str(v) for k, v in overrides.items()}}
        if self.backend == "redis":
            config["MCP_REDIS_URL"] = self.server.url
        settings = Settings.from_mapping(config)
        hub: Hub = RedisHub(settings) if self.backend == "redis" else MemoryHub(settings)
        self.made.append(hub)
        return hub

    def close(self) -> None:
        """Stop every hub's greenlets and connections."""
        for hub in self.made:
            hub.shutdown()
            if isinstance(hub, RedisHub):
                hub.stop()


@pytest.fixture(params=BACKENDS)
def make_hub(request) -> Iterator[Hubs]:
    """A hub factory for each backend; the Redis one starts on an empty database."""
    server = None
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
        server.client().flushdb()
    hubs = Hubs(request.param, server)
    yield hubs
    hubs.close()


@pytest.fixture
def hub(make_hub) -> Hub:
    """A hub with default settings."""
    return make_hub()


@pytest.fixture
def hub_log() -> Iterator[list[logging.LogRecord]]:
    """Records written to the mcp.hub logger during the test."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("mcp.hub")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


def new_session(hub: Hub, **fields: Any) -> Session:
    """Create and store a session."""
    session = Session(**fields)
    hub.create_session(session)
    return session


def message(n: int) -> dict[str, Any]:
    """A small JSON-RPC notification numbered n."""
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}


def numbers(events: list[tuple[str, bytes]]) -> list[int]:
    """The n of each message event."""
    return [json.loads(data)["params"]["n"] for _, data in events]


# sessions
def test_created_session_loads_with_its_fields(hub):
    session = new_session(hub, principal="alice", protocol_version="2025-06-18")
    loaded = hub.get_session(session.id)
    assert loaded is not None
    assert (loaded.id, loaded.principal, loaded.protocol_version) == (session.id, "alice", "2025-06-18")


def test_unknown_session_is_none(hub):
    assert hub.get_session("0" * 32) is None


def test_saved_changes_are_seen_by_the_next_load(hub):
    session = new_session(hub)
    session.log_level = "warning"
    session.subscriptions.append("file:///a")
    session.initialized = True
    hub.save_session(session)
    loaded = hub.get_session(session.id)
    assert (loaded.log_level, loaded.subscriptions, loaded.initialized) == ("warning", ["file:///a"], True)


def test_closed_session_is_gone_and_closing_again_says_so(hub):
    session = new_session(hub)
    assert hub.close_session(session.id) is True
    assert hub.get_session(session.id) is None
    assert hub.close_session(session.id) is False


def test_saving_a_closed_session_does_not_bring_it_back(hub):
    session = new_session(hub)
    hub.close_session(session.id)
    hub.save_session(session)
    assert hub.get_session(session.id) is None


def test_creating_past_max_sessions_raises_capacity_error(make_hub):
    hub = make_hub(MCP_MAX_SESSIONS=2)
    new_session(hub)
    new_session(hub)
    with pytest.raises(CapacityError):
        new_session(hub)


def test_session_count_counts_open_sessions(hub):
    first = new_session(hub)
    new_session(hub)
    assert hub.session_count() == 2
    hub.close_session(first.id)
    assert hub.session_count() == 1


def test_idle_session_expires_after_ttl(make_hub):
    hub = make_hub(MCP_SESSION_TTL_S=0.3)
    session = new_session(hub)
    # Polling get_session would keep it alive, so wait on the count, which touches nothing.
    assert wait_until(lambda: hub.session_count() == 0, timeout=3.0)
    assert hub.get_session(session.id) is None


def test_get_session_refreshes_the_idle_timer(make_hub):
    hub = make_hub(MCP_SESSION_TTL_S=0.6)
    session = new_session(hub)
    for _ in range(6):
        gevent.sleep(0.2)
        assert hub.get_session(session.id) is not None


def test_session_with_a_stream_open_does_not_expire(make_hub):
    hub = make_hub(MCP_SESSION_TTL_S=0.4)
    session = new_session(hub)
    subscription = hub.subscribe(session.id)
    gevent.sleep(1.0)
    if isinstance(hub, MemoryHub):
        hub.reap()
    else:
        hub.refresh()
    assert hub.get_session(session.id) is not None
    subscription.close()


def test_detached_session_expires_after_the_resume_window(make_hub):
    hub = make_hub(MCP_RESUME_WINDOW_S=0.3)
    session = new_session(hub)
    hub.subscribe(session.id).close()
    # peek_session watches without counting as client activity, which would end the window.
    assert wait_until(lambda: hub.peek_session(session.id) is None, timeout=3.0)
    assert hub.get_session(session.id) is None


def test_a_client_request_during_the_resume_window_keeps_the_session(make_hub):
    """Streamable HTTP clients need no stream: one that keeps posting after its stream closed stays."""
    hub = make_hub(MCP_RESUME_WINDOW_S=0.3)
    session = new_session(hub)
    hub.subscribe(session.id).close()
    for _ in range(4):
        gevent.sleep(0.2)
        assert hub.get_session(session.id) is not None
    gevent.sleep(0.5)
    assert hub.peek_session(session.id) is not None


def test_reattaching_within_the_resume_window_keeps_the_session(make_hub):
    hub = make_hub(MCP_RESUME_WINDOW_S=0.5)
    session = new_session(hub)
    hub.subscribe(session.id).close()
    subscription = hub.subscribe(session.id)
    gevent.sleep(0.8)
    assert hub.get_session(session.id) is not None
    subscription.close()


# delivery and replay
def test_publish_to_unknown_session_returns_none(hub):
    assert hub.publish("0" * 32, message(1)) is None


def test_publish_returns_distinct_string_event_ids(hub):
    session = new_session(hub)
    ids = [hub.publish(session.id, message(n)) for n in range(5)]
    assert all(isinstance(i, str) and i for i in ids)
    assert len(set(ids)) == 5


def test_subscribe_to_unknown_session_raises_key_error(hub):
    with pytest.raises(KeyError):
        hub.subscribe("0" * 32)


def test_stream_gets_missed_events_then_live_ones_in_order(hub):
    session = new_session(hub)
    for n in range(3):
        hub.publish(session.id, message(n))
    subscription = hub.subscribe(session.id)
    for n in range(3, 6):
        hub.publish(session.id, message(n))
    assert numbers(drain(subscription)) == [0, 1, 2, 3, 4, 5]
    subscription.close()


def test_event_ids_on_the_stream_are_those_publish_returned(hub):
    session = new_session(hub)
    subscription = hub.subscribe(session.id)
    ids = [hub.publish(session.id, message(n)) for n in range(3)]
    assert [event_id for event_id, _ in drain(subscription)] == ids
    subscription.close()


def test_last_event_id_resumes_right_after_that_event(hub):
    session = new_session(hub)
    ids = [hub.publish(session.id, message(n)) for n in range(5)]
    subscription = hub.subscribe(session.id, last_event_id=ids[1])
    assert numbers(drain(subscription)) == [2, 3, 4]
    subscription.close()


def test_unreadable_last_event_id_replays_nothing_but_streams_live_events(hub):
    session = new_session(hub)
    hub.publish(session.id, message(0))
    subscription = hub.subscribe(session.id, last_event_id="not-an-id")
    hub.publish(session.id, message(1))
    assert numbers(drain(subscription)) == [1]
    subscription.close()


def test_reconnect_without_last_event_id_gets_only_what_was_never_delivered(hub):
    session = new_session(hub)
    first = hub.subscribe(session.id)
    hub.publish(session.id, message(0))
    hub.publish(session.id, message(1))
    assert numbers(drain(first)) == [0, 1]
    first.close()
    hub.publish(session.id, message(2))
    second = hub.subscribe(session.id)
    assert numbers(drain(second)) == [2]
    second.close()


def test_message_published_with_no_stream_attached_is_kept_for_replay(hub):
    session = new_session(hub)
    hub.subscribe(session.id).close()
    event_id = hub.publish(session.id, message(7))
    subscription = hub.subscribe(session.id)
    assert drain(subscription) == [(event_id, dumps(message(7)))]
    subscription.close()


def test_replay_keeps_only_the_newest_replay_max_events(make_hub):
    hub = make_hub(MCP_REPLAY_MAX=5)
    session = new_session(hub)
    for n in range(400):
        hub.publish(session.id, message(n))
    subscription = hub.subscribe(session.id)
    got = numbers(drain(subscription, limit=1000))
    # Redis trims approximately (whole stream nodes), so allow some slack, but never unbounded.
    assert got[-1] == 399 and 5 <= len(got) <= 200
    assert got == sorted(got)
    subscription.close()


# request streams (a Streamable HTTP POST's own event stream, resumable with Last-Event-ID)
def test_request_stream_events_stay_off_the_sessions_own_stream(hub):
    session = new_session(hub)
    own = hub.subscribe(session.id)
    hub.publish(session.id, message(1), stream="req1")
    hub.publish(session.id, message(2))
    assert numbers(drain(own)) == [2]
    own.close()
    assert numbers(drain(hub.subscribe(session.id, last_event_id=None))) == []


def test_request_stream_resumes_from_its_priming_id_with_its_own_events_only(hub):
    session = new_session(hub)
    ids = [hub.publish(session.id, message(n), stream="req1") for n in range(3)]
    hub.publish(session.id, message(99), stream="req2")
    hub.publish(session.id, message(98))
    assert all(event_id.endswith("/req1") for event_id in ids)
    resumed = hub.subscribe(session.id, last_event_id=join_event_id("0", "req1"))
    assert resumed.stream == "req1"
    hub.publish(session.id, message(3), stream="req1")
    events = drain(resumed)
    assert numbers(events) == [0, 1, 2, 3]
    assert [event_id for event_id, _ in events][:3] == ids
    resumed.close()


def test_request_stream_resumes_right_after_the_last_event_id(hub):
    session = new_session(hub)
    ids = [hub.publish(session.id, message(n), stream="req1") for n in range(4)]
    resumed = hub.subscribe(session.id, last_event_id=ids[1])
    assert numbers(drain(resumed)) == [2, 3]
    resumed.close()


def test_resumed_request_stream_is_not_the_sessions_stream(hub):
    session = new_session(hub)
    own = hub.subscribe(session.id, exclusive=True)
    resumed = hub.subscribe(session.id, last_event_id=join_event_id("0", "req1"))
    assert hub.streaming_session_ids() == [session.id]
    hub.publish(session.id, message(1), stream="req1")
    hub.publish(session.id, message(2))
    assert numbers(drain(resumed)) == [1]
    assert numbers(drain(own)) == [2]
    resumed.close()
    assert hub.streaming_session_ids() == [session.id]
    own.close()


def test_closing_a_session_ends_its_request_streams(hub):
    session = new_session(hub)
    resumed = hub.subscribe(session.id, last_event_id=join_event_id("0", "req1"))
    hub.close_session(session.id)
    with pytest.raises(StreamClosed):
        for _ in range(5):
            resumed.get(1.0)


# one stream per session
def test_exclusive_subscribe_conflicts_with_an_attached_stream(hub):
    session = new_session(hub)
    first = hub.subscribe(session.id, exclusive=True)
    with pytest.raises(StreamConflict):
        hub.subscribe(session.id, exclusive=True)
    first.close()
    hub.subscribe(session.id, exclusive=True).close()


def test_failed_exclusive_subscribe_leaves_the_first_stream_working(hub):
    session = new_session(hub)
    first = hub.subscribe(session.id, exclusive=True)
    with pytest.raises(StreamConflict):
        hub.subscribe(session.id, exclusive=True)
    hub.publish(session.id, message(1))
    assert numbers(drain(first)) == [1]
    first.close()


def test_non_exclusive_subscribe_replaces_the_attached_stream(hub):
    session = new_session(hub)
    first = hub.subscribe(session.id)
    second = hub.subscribe(session.id)
    with pytest.raises(StreamClosed) as closed:
        first.get(1.0)
    assert "replaced" in closed.value.reason
    hub.publish(session.id, message(1))
    assert numbers(drain(second)) == [1]
    first.close()
    second.close()


def test_closing_a_session_ends_its_stream(hub):
    session = new_session(hub)
    subscription = hub.subscribe(session.id)
    hub.close_session(session.id)
    with pytest.raises(StreamClosed) as closed:
        subscription.get(2.0)
    assert closed.value.reason == "session closed"


def test_streaming_session_ids_lists_attached_streams_only(hub):
    streaming = new_session(hub)
    idle = new_session(hub)
    subscription = hub.subscribe(streaming.id)
    assert hub.streaming_session_ids() == [streaming.id]
    subscription.close()
    assert idle.id not in hub.streaming_session_ids()
    assert hub.streaming_session_ids() == []


def test_slow_consumer_stream_is_closed_with_a_logged_reason(make_hub, hub_log):
    hub = make_hub(MCP_QUEUE_MAX=3)
    session = new_session(hub)
    subscription = hub.subscribe(session.id)
    for n in range(10):
        hub.publish(session.id, message(n))
    gevent.sleep(0.3)  # let live delivery reach the stream's queue
    received = 0
    with pytest.raises(StreamClosed) as closed:
        for _ in range(20):
            if subscription.get(2.0) is not None:
                received += 1
    assert closed.value.reason == "slow consumer"
    assert received <= 3
    assert any("slow consumer" in record.getMessage() for record in hub_log)
    subscription.close()
    assert session.id not in hub.streaming_session_ids()


@pytest.mark.redis
def test_slow_consumer_queue_is_dropped_at_once(redis_hubs):
    hub = redis_hubs(MCP_QUEUE_MAX=3)
    session = new_session(hub)
    subscription = hub.subscribe(session.id)
    for n in range(10):
        hub.publish(session.id, message(n))
    # The stalled client never reads again, so nothing may wait for it to.
    assert wait_until(lambda: subscription.reason == "slow consumer")
    assert session.id not in hub.streaming_session_ids()
    assert subscription.queue.qsize() <= 1  # only the close marker is left
    # What it missed stays in the replay log for when it reconnects.
    subscription.close()
    assert numbers(drain(hub.subscribe(session.id))) == list(range(10))


def test_shutdown_ends_every_stream(hub):
    subscriptions = [hub.subscribe(new_session(hub).id) for _ in range(3)]
    hub.shutdown()
    for subscription in subscriptions:
        with pytest.raises(StreamClosed) as closed:
            subscription.get(2.0)
        assert closed.value.reason == "server shutting down"
        subscription.close()


# server-to-client requests, cancellation, broadcast
def test_resolve_wakes_the_tool_waiting_for_the_answer(hub):
    session = new_session(hub)
    subscription = hub.subscribe(session.id)
    waiter = gevent.spawn(hub.request, session.id, "roots/list", {}, 5.0)
    event = subscription.get(2.0)
    assert event is not None
    request = json.loads(event[1])
    assert request["method"] == "roots/list"
    assert hub.resolve(session.id, {"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}}) is True
    assert waiter.get(timeout=5.0)["result"] == {"roots": []}
    subscription.close()


def test_request_without_an_answer_times_out_and_tells_the_client(hub):
    session = new_session(hub)
    subscription = hub.subscribe(session.id)
    with pytest.raises(RpcError) as failed:
        hub.request(session.id, "roots/list", {}, 0.2)
    assert failed.value.code == REQUEST_TIMEOUT
    methods = [json.loads(data)["method"] for data in payloads(drain(subscription))]
    assert methods == ["roots/list", "notifications/cancelled"]
    subscription.close()


def test_cancel_kills_the_running_request(hub):
    session = new_session(hub)
    running = gevent.spawn(gevent.sleep, 30)
    hub.inflight.add(session.id, 7, running)
    hub.cancel(session.id, 7)
    running.join(timeout=2.0)
    assert running.dead
    assert len(hub.inflight) == 0


def test_broadcast_reaches_this_workers_listener(hub):
    heard: list[tuple[str, dict]] = []
    hub.on_broadcast = lambda kind, note: heard.append((kind, note))
    note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    hub.broadcast(note)
    assert wait_until(lambda: heard, timeout=2.0) == [("notify", note)]
    gevent.sleep(0.2)
    assert len(heard) == 1  # not twice through Redis


def test_ready_is_true_when_the_backing_store_answers(hub):
    assert hub.ready() is True


# Redis only: several workers on one Redis
@pytest.fixture
def redis_hubs(redis_server) -> Iterator[Hubs]:  # noqa: F811
    """A factory of RedisHub 'workers' sharing the module's redis-server."""
    redis_server.client().flushdb()
    hubs = Hubs("redis", redis_server)
    yield hubs
    hubs.close()


@pytest.mark.redis
def test_message_published_on_one_worker_reaches_the_stream_on_another(redis_hubs):
    worker_a, worker_b = redis_hubs(), redis_hubs()
    session = new_session(worker_a)
    subscription = worker_a.subscribe(session.id)
    assert wait_until(lambda: worker_b.get_session(session.id))
    for n in range(20):
        worker_b.publish(session.id, message(n))
    assert numbers(take(subscription, 20)) == list(range(20))
    assert drain(subscription) == []
    subscription.close()


@pytest.mark.redis
def test_request_stream_resumed_on_another_worker_gets_events_published_here(redis_hubs):
    worker_a, worker_b = redis_hubs(), redis_hubs()
    session = new_session(worker_a)
    first = worker_a.publish(session.id, message(0), stream="req1")
    resumed = worker_b.subscribe(session.id, last_event_id=first)
    assert wait_until(worker_b.ready)
    for n in range(1, 4):
        worker_a.publish(session.id, message(n), stream="req1")
    assert numbers(take(resumed, 3)) == [1, 2, 3]
    resumed.close()


@pytest.mark.redis
def test_exclusive_stream_conflicts_across_workers(redis_hubs):
    worker_a, worker_b = redis_hubs(), redis_hubs()
    session = new_session(worker_a)
    first = worker_a.subscribe(session.id, exclusive=True)
    assert wait_until(worker_a.ready)
    with pytest.raises(StreamConflict):
        worker_b.subscribe(session.id, exclusive=True)
    first.close()
    worker_b.subscribe(session.id, exclusive=True).close()


@pytest.mark.redis
def test_stream_claimed_by_a_dead_worker_does_not_block_a_new_one(redis_hubs, redis_server):  # noqa: F811
    worker = redis_hubs()
    session = new_session(worker)
    # A claim left by a worker that was killed: nobody listens on its channel any more.
    redis_server.client().set(session_keys(session.id)["claim"], "deadbeefdeadbeef|0123", px=20000)
    subscription = worker.subscribe(session.id, exclusive=True)
    worker.publish(session.id, message(1))
    assert numbers(drain(subscription)) == [1]
    subscription.close()


@pytest.mark.redis
def test_stream_on_another_worker_is_replaced_and_told_why(redis_hubs):
    worker_a, worker_b = redis_hubs(), redis_hubs()
    session = new_session(worker_a)
    first = worker_a.subscribe(session.id)
    assert wait_until(worker_a.ready)
    second = worker_b.subscribe(session.id)
    with pytest.raises(StreamClosed) as closed:
        first.get(3.0)
    assert "replaced" in closed.value.reason
    worker_a.publish(session.id, message(1))
    assert numbers(drain(second)) == [1]
    assert worker_a.streaming_session_ids() == []
    first.close()
    second.close()


@pytest.mark.redis
def test_closing_a_session_on_one_worker_ends_its_stream_on_another(redis_hubs):
    worker_a, worker_b = redis_hubs(), redis_hubs()
    session = new_session(worker_a)
    subscription = worker_a.subscribe(session.id)
    assert wait_until(worker_a.ready)
    assert worker_b.close_session(session.id) is True
    with pytest.raises(StreamClosed) as closed:
        subscription.get(3.0)
    assert closed.value.reason == "session closed"


@pytest.mark.redis
def test_answer_posted_to_another_worker_wakes_the_waiting_tool(redis_hubs):
    worker_a, worker_b = redis_hubs(), redis_hubs()
    session = new_session(worker_a)
    subscription = worker_a.subscribe(session.id)
    assert wait_until(lambda: worker_a.ready() and worker_b.ready())
    waiter = gevent.spawn(worker_a.request, session.id, "sampling/createMessage", {}, 10.0)
    request = json.loads(subscription.get(3.0)[1])
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"role": "assistant"}}
    assert worker_b.resolve(session.id, answer) is True
    assert waiter.get(timeout=5.0)["result"] == {"role": "assistant"}
    subscription.close()


@pytest.mark.redis
def test_cancel_on_another_worker_kills_the_request_running_here(redis_hubs):
    worker_a, worker_b = redis_hubs(), redis_hubs()
    session = new_session(worker_a)
    assert wait_until(lambda: worker_a.ready() and worker_b.ready())
    running = gevent.spawn(gevent.sleep, 30)
    worker_a.inflight.add(session.id, "req-1", running)
    worker_b.cancel(session.id, "req-1")
    running.join(timeout=3.0)
    assert running.dead


@pytest.mark.redis
def test_broadcast_reaches_every_session_of_the_fleet_once(redis_hubs):
    """From any worker, a broadcast lands once on each session: streaming on any worker, or waiting in its replay."""
    workers = [redis_hubs() for _ in range(3)]
    assert wait_until(lambda: all(worker.ready() for worker in workers))
    streaming = [new_session(worker) for worker in workers]
    subscriptions = [worker.subscribe(session.id) for worker, session in zip(workers, streaming, strict=True)]
    quiet = new_session(workers[0])
    origin = workers[1]
    origin.on_broadcast = lambda kind, note: [origin.publish(sid, note) for sid in origin.broadcast_session_ids()]
    note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    origin.broadcast(note)
    for subscription in subscriptions:
        assert [loads(data) for _, data in drain(subscription)] == [note]
        subscription.close()
    later = workers[2].subscribe(quiet.id)
    assert [loads(data) for _, data in drain(later)] == [note]
    later.close()


def test_broadcast_session_ids_include_sessions_without_a_stream(hub):
    streaming, quiet = new_session(hub), new_session(hub)
    subscription = hub.subscribe(streaming.id)
    assert {streaming.id, quiet.id} <= set(hub.broadcast_session_ids())
    subscription.close()


@pytest.mark.redis
def test_session_keys_expire_in_redis_after_the_idle_ttl(redis_hubs, redis_server):  # noqa: F811
    worker = redis_hubs(MCP_SESSION_TTL_S=0.5)
    session = new_session(worker)
    worker.publish(session.id, message(1))
    keys = session_keys(session.id)
    client = redis_server.client()
    assert client.exists(keys["session"], keys["replay"]) == 2
    assert wait_until(lambda: client.exists(*keys.values()) == 0, timeout=3.0)


@pytest.mark.redis
def test_stream_catches_up_after_its_subscriber_connection_drops(redis_hubs, redis_server):  # noqa: F811
    worker_a, worker_b = redis_hubs(), redis_hubs()
    session = new_session(worker_a)
    subscription = worker_a.subscribe(session.id)
    assert wait_until(worker_a.ready)
    client = redis_server.client()
    client.client_kill_filter(_type="pubsub", skipme=True)
    for n in range(5):
        worker_b.publish(session.id, message(n))
    assert numbers(take(subscription, 5)) == [0, 1, 2, 3, 4]
    assert drain(subscription) == []
    subscription.close()


@pytest.mark.redis
def test_stream_whose_claim_vanished_takes_it_back_and_catches_up(redis_hubs, redis_server):  # noqa: F811
    worker_a, worker_b = redis_hubs(), redis_hubs()
    session = new_session(worker_a)
    subscription = worker_a.subscribe(session.id)
    assert wait_until(worker_a.ready)
    claim = session_keys(session.id)["claim"]
    redis_server.client().delete(claim)  # as after a Redis restart, or an outage longer than the claim
    worker_b.publish(session.id, message(1))  # goes to the replay log only: nobody claims the stream
    worker_a.refresh()
    assert redis_server.client().get(claim).decode() == subscription.owner
    worker_b.publish(session.id, message(2))
    assert numbers(take(subscription, 2)) == [1, 2]
    subscription.close()
    assert redis_server.client().exists(claim) == 0


@pytest.mark.redis
def test_hub_fails_fast_while_redis_is_down_and_recovers_by_itself():
    with RedisServer() as server:
        settings = Settings.from_mapping({"MCP_REDIS_URL": server.url, "MCP_REDIS_TIMEOUT_S": "1"})
        hub = RedisHub(settings)
        try:
            session = new_session(hub)
            assert hub.ready()
            server.stop()
            started = time.monotonic()
            for call in (lambda: hub.get_session(session.id), lambda: new_session(hub),
                         lambda: hub.publish(session.id, message(1))):
                with pytest.raises(HubUnavailable):
                    call()
            assert time.monotonic() - started < 3.0
            assert wait_until(lambda: not hub.ready(), timeout=5.0)
            server.start()
            assert wait_until(hub.ready, timeout=10.0)
            fresh = new_session(hub)  # the data went with the old process (no persistence)
            assert hub.get_session(fresh.id) is not None
        finally:
            hub.stop()


@pytest.mark.redis
def test_hub_calls_are_bounded_when_redis_hangs():
    with RedisServer() as server:
        settings = Settings.from_mapping({"MCP_REDIS_URL": server.url, "MCP_REDIS_TIMEOUT_S": "0.5"})
        hub = RedisHub(settings)
        try:
            session = new_session(hub)
            server.pause()
            started = time.monotonic()
            with pytest.raises(HubUnavailable):
                hub.get_session(session.id)
            assert time.monotonic() - started < 2.0
            server.resume()
            assert wait_until(lambda: hub.ready() and hub.get_session(session.id) is not None, timeout=10.0)
        finally:
            server.resume()
            hub.stop()

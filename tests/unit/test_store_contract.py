"""The store contract, checked against both backends: MemoryStore, and RedisStore on a real redis-server.

Every test here runs once per backend, so the two behave the same to the transports.
Expiry tests let time pass with `make_store.elapse`: the in-memory stores' clock is stepped,
Redis keeps its own time and is waited for. What only Redis has (several workers on
one Redis, keys expiring in Redis, Redis going away) is in test_redis_store.py.
"""

from __future__ import annotations

import json
import logging

import gevent
import pytest

from flask_mcp_gevent.conditions import CapacityError, StreamConflict
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.errors import REQUEST_TIMEOUT, RpcError
from flask_mcp_gevent.event_ids import join_event_id
from flask_mcp_gevent.metrics import instruments
from flask_mcp_gevent.session import SessionChange
from flask_mcp_gevent.store.memory import MemoryStore
from flask_mcp_gevent.subscription import StreamClosed
from tests.support.store_seam import streaming_session_ids
from tests.support.stores import ask, drain, message, new_session, numbers, payloads, serve, take
from tests.support.waiting import wait_until


# sessions
def test_created_session_loads_with_its_fields(store):
    session = new_session(store, principal="alice", protocol_version="2025-06-18")
    loaded = store.sessions.get_session(session.id)
    assert loaded is not None
    assert (loaded.id, loaded.principal, loaded.protocol_version) == (session.id, "alice", "2025-06-18")


def test_unknown_session_is_none(store):
    assert store.sessions.get_session("0" * 32) is None


def test_changes_are_seen_by_the_next_load(store):
    session = new_session(store)
    store.sessions.update_session(session.id, SessionChange(assign={"log_level": "warning", "initialized": True},
                                                 subscribe="file:///a"))
    loaded = store.sessions.get_session(session.id)
    assert (loaded.log_level, loaded.subscriptions, loaded.initialized) == ("warning", ["file:///a"], True)


def test_closed_session_is_gone_and_closing_again_says_so(store):
    session = new_session(store)
    assert store.sessions.close_session(session.id) is True
    assert store.sessions.get_session(session.id) is None
    assert store.sessions.close_session(session.id) is False


def test_changing_a_closed_session_does_not_bring_it_back(store):
    session = new_session(store)
    store.sessions.close_session(session.id)
    assert store.sessions.update_session(session.id, SessionChange(assign={"log_level": "warning"})).session is None
    assert store.sessions.get_session(session.id) is None


def test_creating_past_max_sessions_raises_capacity_error(make_store):
    store = make_store(MCP_MAX_SESSIONS=2)
    new_session(store)
    new_session(store)
    with pytest.raises(CapacityError):
        new_session(store)


def test_session_count_counts_open_sessions(store):
    first = new_session(store)
    new_session(store)
    assert store.sessions.session_count() == 2
    store.sessions.close_session(first.id)
    assert store.sessions.session_count() == 1


# Expiry: make_store.elapse steps the in-memory stores' clock and really waits for Redis, whose margins are
# therefore wide (the sleeps may overrun on a loaded machine, by up to about half a second).
def test_idle_session_expires_after_ttl(make_store):
    store = make_store(MCP_SESSION_TTL_S=0.3)
    session = new_session(store)
    make_store.elapse(0.6)
    # Polling get_session would keep it alive, so wait on the count, which touches nothing: the in-memory store's
    # reaper or Redis's own expiry removes the session.
    assert wait_until(lambda: store.sessions.session_count() == 0, timeout=3.0)
    assert store.sessions.get_session(session.id) is None


def test_get_session_refreshes_the_idle_timer(make_store):
    store = make_store(MCP_SESSION_TTL_S=2.0)
    session = new_session(store)
    # One and a half TTLs in all, a quarter of one between lookups: it lives only if every lookup refreshes it.
    # The margin (a second and a half) absorbs sleeps that overrun on a loaded machine.
    for _ in range(6):
        make_store.elapse(0.5)
        assert store.sessions.get_session(session.id) is not None


def test_session_with_a_stream_open_does_not_expire(make_store):
    store = make_store(MCP_SESSION_TTL_S=1.0)
    session = new_session(store)
    subscription = store.events.subscribe(session.id)
    make_store.elapse(2.0)
    if isinstance(store, MemoryStore):
        store.sessions.reap()
    else:
        store.claims.refresh()
    assert store.sessions.get_session(session.id) is not None
    subscription.close()


def test_detached_session_expires_after_the_resume_window(make_store):
    store = make_store(MCP_RESUME_WINDOW_S=0.3)
    session = new_session(store)
    store.events.subscribe(session.id).close()
    make_store.elapse(0.6)
    # peek_session watches without counting as client activity, which would end the window.
    assert wait_until(lambda: store.sessions.peek_session(session.id) is None, timeout=3.0)
    assert store.sessions.get_session(session.id) is None


def test_a_client_request_during_the_resume_window_keeps_the_session(make_store):
    """Streamable HTTP clients need no stream: one that keeps posting after its stream closed stays."""
    store = make_store(MCP_RESUME_WINDOW_S=1.5)
    session = new_session(store)
    store.events.subscribe(session.id).close()
    for _ in range(6):
        make_store.elapse(0.3)
        assert store.sessions.get_session(session.id) is not None
    make_store.elapse(2.0)
    assert store.sessions.peek_session(session.id) is not None


def test_reattaching_within_the_resume_window_keeps_the_session(make_store):
    # The window is wide because Redis keeps real time: the re-attach must land inside it on a loaded machine.
    store = make_store(MCP_RESUME_WINDOW_S=1.5)
    session = new_session(store)
    store.events.subscribe(session.id).close()
    subscription = store.events.subscribe(session.id)
    make_store.elapse(2.0)
    assert store.sessions.get_session(session.id) is not None
    subscription.close()


# delivery and replay
def test_publish_to_unknown_session_returns_none(store):
    assert store.events.publish("0" * 32, message(1)) is None


def test_publish_returns_distinct_string_event_ids(store):
    session = new_session(store)
    ids = [store.events.publish(session.id, message(n)) for n in range(5)]
    assert all(isinstance(i, str) and i for i in ids)
    assert len(set(ids)) == 5


def test_subscribe_to_unknown_session_raises_key_error(store):
    with pytest.raises(KeyError):
        store.events.subscribe("0" * 32)


def test_stream_gets_missed_events_then_live_ones_in_order(store):
    session = new_session(store)
    for n in range(3):
        store.events.publish(session.id, message(n))
    subscription = store.events.subscribe(session.id)
    for n in range(3, 6):
        store.events.publish(session.id, message(n))
    assert numbers(drain(subscription)) == [0, 1, 2, 3, 4, 5]
    subscription.close()


def test_event_ids_on_the_stream_are_those_publish_returned(store):
    session = new_session(store)
    subscription = store.events.subscribe(session.id)
    ids = [store.events.publish(session.id, message(n)) for n in range(3)]
    assert [event_id for event_id, _ in drain(subscription)] == ids
    subscription.close()


def test_last_event_id_resumes_right_after_that_event(store):
    session = new_session(store)
    ids = [store.events.publish(session.id, message(n)) for n in range(5)]
    subscription = store.events.subscribe(session.id, last_event_id=ids[1])
    assert numbers(drain(subscription)) == [2, 3, 4]
    subscription.close()


def test_unreadable_last_event_id_replays_nothing_but_streams_live_events(store):
    session = new_session(store)
    store.events.publish(session.id, message(0))
    subscription = store.events.subscribe(session.id, last_event_id="not-an-id")
    store.events.publish(session.id, message(1))
    assert numbers(drain(subscription)) == [1]
    subscription.close()


def test_reconnect_without_last_event_id_gets_only_what_was_never_delivered(store):
    session = new_session(store)
    first = store.events.subscribe(session.id)
    store.events.publish(session.id, message(0))
    store.events.publish(session.id, message(1))
    assert numbers(drain(first)) == [0, 1]
    first.close()
    store.events.publish(session.id, message(2))
    second = store.events.subscribe(session.id)
    assert numbers(drain(second)) == [2]
    second.close()


def test_message_published_with_no_stream_attached_is_kept_for_replay(store):
    session = new_session(store)
    store.events.subscribe(session.id).close()
    event_id = store.events.publish(session.id, message(7))
    subscription = store.events.subscribe(session.id)
    assert drain(subscription) == [(event_id, dumps(message(7)))]
    subscription.close()


def test_replay_keeps_only_the_newest_replay_max_events(make_store):
    store = make_store(MCP_REPLAY_MAX=5)
    session = new_session(store)
    for n in range(400):
        store.events.publish(session.id, message(n))
    subscription = store.events.subscribe(session.id)
    got = numbers(drain(subscription, limit=1000))
    # Redis trims approximately (whole stream nodes), so allow some slack, but never unbounded.
    assert got[-1] == 399 and 5 <= len(got) <= 200
    assert got == sorted(got)
    subscription.close()


def replay_gaps() -> float:
    """How many streams resumed past a hole in their replay log, as /metrics reports it."""
    return instruments().registry.get_sample_value("mcp_replay_gaps_total") or 0.0


def six_events_in_a_log_of_three(make_store):
    """A store keeping three events per session, and a session that published six (the first three dropped)."""
    store = make_store(MCP_REPLAY_MAX=3)
    session = new_session(store)
    return store, session, [store.events.publish(session.id, message(n)) for n in range(6)]


def test_resuming_after_an_event_the_replay_log_dropped_is_logged_and_counted(make_store, caplog):
    store, session, ids = six_events_in_a_log_of_three(make_store)
    before = replay_gaps()
    with caplog.at_level(logging.WARNING, logger="mcp.store"):
        subscription = store.events.subscribe(session.id, last_event_id=ids[1])
    # Event 2 was dropped: the stream gets what the log kept, and the hole is said aloud.
    assert numbers(drain(subscription)) == [3, 4, 5]
    assert replay_gaps() == before + 1
    assert "has dropped" in caplog.text and session.id[:8] in caplog.text
    subscription.close()


def test_resuming_inside_the_replay_log_reports_no_gap(make_store, caplog):
    store, session, ids = six_events_in_a_log_of_three(make_store)
    before = replay_gaps()
    with caplog.at_level(logging.WARNING, logger="mcp.store"):
        subscription = store.events.subscribe(session.id, last_event_id=ids[3])
        assert numbers(drain(subscription)) == [4, 5]
        subscription.close()
        subscription = store.events.subscribe(session.id, last_event_id=ids[4])
        assert numbers(drain(subscription)) == [5]
    assert replay_gaps() == before
    assert "has dropped" not in caplog.text
    subscription.close()


# request streams (a Streamable HTTP POST's own event stream, resumable with Last-Event-ID)
def test_request_stream_events_stay_off_the_sessions_own_stream(store):
    session = new_session(store)
    own = store.events.subscribe(session.id)
    store.events.publish(session.id, message(1), stream="req1")
    store.events.publish(session.id, message(2))
    assert numbers(drain(own)) == [2]
    own.close()
    assert numbers(drain(store.events.subscribe(session.id, last_event_id=None), first_timeout=0.5)) == []


def test_request_stream_resumes_from_its_priming_id_with_its_own_events_only(store):
    session = new_session(store)
    ids = [store.events.publish(session.id, message(n), stream="req1") for n in range(3)]
    store.events.publish(session.id, message(99), stream="req2")
    store.events.publish(session.id, message(98))
    assert all(event_id.endswith("/req1") for event_id in ids)
    resumed = store.events.subscribe(session.id, last_event_id=join_event_id("0", "req1"))
    assert resumed.stream == "req1"
    store.events.publish(session.id, message(3), stream="req1")
    # Waited for: the live one crosses the cluster's bus, which a loaded machine may hold past drain's pause.
    events = take(resumed, 4)
    assert numbers(events) == [0, 1, 2, 3]
    assert [event_id for event_id, _ in events][:3] == ids
    assert drain(resumed, first_timeout=0.3) == []  # and nothing of req2's or the session's own after it
    resumed.close()


def test_request_stream_resumes_right_after_the_last_event_id(store):
    session = new_session(store)
    ids = [store.events.publish(session.id, message(n), stream="req1") for n in range(4)]
    resumed = store.events.subscribe(session.id, last_event_id=ids[1])
    assert numbers(drain(resumed)) == [2, 3]
    resumed.close()


def test_resumed_request_stream_is_not_the_sessions_stream(store):
    session = new_session(store)
    own = store.events.subscribe(session.id, exclusive=True)
    resumed = store.events.subscribe(session.id, last_event_id=join_event_id("0", "req1"))
    assert streaming_session_ids(store) == [session.id]
    store.events.publish(session.id, message(1), stream="req1")
    store.events.publish(session.id, message(2))
    assert numbers(drain(resumed)) == [1]
    assert numbers(drain(own)) == [2]
    resumed.close()
    assert streaming_session_ids(store) == [session.id]
    own.close()


def test_closing_a_session_ends_its_request_streams(store):
    session = new_session(store)
    resumed = store.events.subscribe(session.id, last_event_id=join_event_id("0", "req1"))
    store.sessions.close_session(session.id)
    with pytest.raises(StreamClosed):
        for _ in range(5):
            resumed.get(1.0)


# one stream per session
def test_exclusive_subscribe_conflicts_with_an_attached_stream(store):
    session = new_session(store)
    first = store.events.subscribe(session.id, exclusive=True)
    with pytest.raises(StreamConflict):
        store.events.subscribe(session.id, exclusive=True)
    first.close()
    store.events.subscribe(session.id, exclusive=True).close()


def test_failed_exclusive_subscribe_leaves_the_first_stream_working(store):
    session = new_session(store)
    first = store.events.subscribe(session.id, exclusive=True)
    with pytest.raises(StreamConflict):
        store.events.subscribe(session.id, exclusive=True)
    store.events.publish(session.id, message(1))
    assert numbers(drain(first)) == [1]
    first.close()


def test_non_exclusive_subscribe_replaces_the_attached_stream(store):
    session = new_session(store)
    first = store.events.subscribe(session.id)
    second = store.events.subscribe(session.id)
    with pytest.raises(StreamClosed) as closed:
        first.get(1.0)
    assert "replaced" in closed.value.reason
    store.events.publish(session.id, message(1))
    assert numbers(drain(second)) == [1]
    first.close()
    second.close()


def test_closing_a_session_ends_its_stream(store):
    session = new_session(store)
    subscription = store.events.subscribe(session.id)
    store.sessions.close_session(session.id)
    with pytest.raises(StreamClosed) as closed:
        subscription.get(2.0)
    assert closed.value.reason == "session closed"


def test_streaming_session_ids_lists_attached_streams_only(store):
    streaming = new_session(store)
    idle = new_session(store)
    subscription = store.events.subscribe(streaming.id)
    assert streaming_session_ids(store) == [streaming.id]
    subscription.close()
    assert idle.id not in streaming_session_ids(store)
    assert streaming_session_ids(store) == []


def test_slow_consumer_stream_is_closed_with_a_logged_reason(make_store, store_log):
    store = make_store(MCP_QUEUE_MAX=3)
    session = new_session(store)
    subscription = store.events.subscribe(session.id)
    for n in range(10):
        store.events.publish(session.id, message(n))
    # Live delivery fills the stream's queue past its bound (at once here, through pub/sub on Redis).
    assert wait_until(lambda: subscription.reason == "slow consumer", timeout=5.0)
    received = 0
    with pytest.raises(StreamClosed) as closed:
        for _ in range(20):
            if subscription.get(2.0) is not None:
                received += 1
    assert closed.value.reason == "slow consumer"
    assert received <= 3
    assert any("slow consumer" in record.getMessage() for record in store_log)
    subscription.close()
    assert session.id not in streaming_session_ids(store)


def test_shutdown_ends_every_stream(store):
    subscriptions = [store.events.subscribe(new_session(store).id) for _ in range(3)]
    store.events.shutdown()
    for subscription in subscriptions:
        with pytest.raises(StreamClosed) as closed:
            subscription.get(2.0)
        assert closed.value.reason == "server shutting down"
        subscription.close()


# server-to-client requests, cancellation, broadcast
def test_resolve_wakes_the_tool_waiting_for_the_answer(store):
    session = new_session(store)
    server = serve(store)
    subscription = store.events.subscribe(session.id)
    waiter = gevent.spawn(ask, server, session, "roots/list", {}, 5.0)
    event = subscription.get(2.0)
    assert event is not None
    request = json.loads(event[1])
    assert request["method"] == "roots/list"
    assert server.resolve(session.id, {"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}}) is True
    assert waiter.get(timeout=5.0)["result"] == {"roots": []}
    subscription.close()


def test_request_without_an_answer_times_out_and_tells_the_client(store):
    session = new_session(store)
    subscription = store.events.subscribe(session.id)
    with pytest.raises(RpcError) as failed:
        ask(serve(store), session, "roots/list", {}, 0.2)
    assert failed.value.code == REQUEST_TIMEOUT
    methods = [json.loads(data)["method"] for data in payloads(drain(subscription))]
    assert methods == ["roots/list", "notifications/cancelled"]
    subscription.close()


def test_cancel_kills_the_running_request(store):
    server = serve(store)
    session = new_session(store)
    running = gevent.spawn(gevent.sleep, 30)
    server.calls.add(session.id, 7, running)
    server.cancel(session.id, 7)
    running.join(timeout=2.0)
    assert running.dead
    assert len(server.calls) == 0


def test_broadcast_reaches_this_workers_session_once(store):
    server = serve(store)
    listener = new_session(store, initialized=True)
    stream = store.events.subscribe(listener.id)
    assert wait_until(store.fleet.ready)
    server.announce_list_changed("tool")
    # A second copy would come down this worker's one subscriber connection ahead of the marker's event,
    # so once the marker is here every copy is too.
    store.events.publish(listener.id, message(1))
    events = [json.loads(data) for data in payloads(take(stream, 2))]
    assert events == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}, message(1)]
    assert drain(stream, first_timeout=0.5) == []
    stream.close()


def test_ready_is_true_when_the_backing_store_answers(store):
    assert store.fleet.ready() is True


def test_broadcast_session_ids_include_sessions_without_a_stream(store):
    streaming, quiet = new_session(store), new_session(store)
    subscription = store.events.subscribe(streaming.id)
    assert {streaming.id, quiet.id} <= set(store.events.broadcast_session_ids())
    subscription.close()

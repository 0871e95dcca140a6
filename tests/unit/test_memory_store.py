"""store.memory: delivery, replay, bounds and expiry of the embedded single-worker store."""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.conditions import CapacityError, QuotaFull, StreamConflict
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.encoding import loads
from flask_mcp_gevent.errors import REQUEST_TIMEOUT, RpcError
from flask_mcp_gevent.event_ids import join_event_id
from flask_mcp_gevent.session import Session, SessionChange
from flask_mcp_gevent.store.memory import REPLAY_DEQUE_FROM, MemoryStore
from flask_mcp_gevent.subscription import StreamClosed
from tests.support.store_seam import streaming_session_ids
from tests.support.stores import ask, serve

# Generous upper bound for a get() that must return at once; only reached when a test fails.
WAIT_S = 5.0


@pytest.fixture
def make_store():
    """Build stores with setting overrides; shut them down (and their reaper) afterwards."""
    stores: list[MemoryStore] = []

    def make(**overrides) -> MemoryStore:
        store = MemoryStore(Settings.from_environ({}, **overrides))
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.events.shutdown()


@pytest.fixture
def store(make_store) -> MemoryStore:
    """A store with default settings."""
    return make_store()


@pytest.fixture
def session(store) -> Session:
    """A session stored in the store."""
    stored = Session()
    store.sessions.create_session(stored)
    return stored


def receive(subscription) -> tuple[str, dict]:
    """Return the next event as (event id, decoded message)."""
    event = subscription.get(WAIT_S)
    assert event is not None, "no event arrived"
    return event[0], loads(event[1])


def message(n: int) -> dict:
    """A distinguishable notification."""
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}


# sessions
def test_a_created_session_can_be_loaded_changed_and_counted(store, session):
    assert store.sessions.get_session(session.id) is session
    assert store.sessions.session_count() == 1
    store.sessions.update_session(session.id, SessionChange(assign={"protocol_version": "2025-06-18"}))
    assert store.sessions.get_session(session.id).protocol_version == "2025-06-18"


def test_an_unknown_session_is_none(store):
    assert store.sessions.get_session("nope") is None
    assert store.sessions.close_session("nope") is False
    assert store.events.publish("nope", message(1)) is None


def test_sessions_are_capped(make_store):
    store = make_store(max_sessions=1)
    store.sessions.create_session(Session())
    with pytest.raises(CapacityError):
        store.sessions.create_session(Session())


def test_an_owner_at_its_limit_is_refused_until_a_session_closes_or_expires(make_store):
    store = make_store(session_ttl_s=60.0)
    first, second = Session(), Session()
    store.sessions.create_session(first, "address:192.0.2.1", 2)
    store.sessions.create_session(second, "address:192.0.2.1", 2)
    with pytest.raises(QuotaFull):
        store.sessions.create_session(Session(), "address:192.0.2.1", 2)
    store.sessions.close_session(first.id)
    store.sessions.create_session(Session(), "address:192.0.2.1", 2)
    store.sessions.slots[second.id].last_seen -= 61.0  # expired: the next create reaps it
    store.sessions.create_session(Session(), "address:192.0.2.1", 2)
    with pytest.raises(QuotaFull):
        store.sessions.create_session(Session(), "address:192.0.2.1", 2)


def test_the_count_per_owner_keeps_only_owners_of_live_sessions(make_store):
    store = make_store(session_ttl_s=60.0)
    for n in range(50):
        for _ in range(3):
            store.sessions.create_session(Session(), f"address:192.0.2.{n}", 5)
    assert len(store.sessions.sessions_per_owner) == 50
    for slot in store.sessions.slots.values():
        slot.last_seen -= 61.0
    assert store.sessions.reap() == 150
    assert store.sessions.sessions_per_owner == {}


# publish / subscribe
def test_published_messages_reach_the_subscriber_in_order_with_increasing_ids(store, session):
    subscription = store.events.subscribe(session.id)
    ids = [store.events.publish(session.id, message(n)) for n in range(3)]
    received = [receive(subscription) for _ in range(3)]
    assert [event_id for event_id, _ in received] == ids
    assert [int(i) for i in ids] == sorted(int(i) for i in ids)
    assert [m["params"]["n"] for _, m in received] == [0, 1, 2]


def test_messages_published_before_the_stream_attaches_are_delivered(store, session):
    store.events.publish(session.id, message(1))
    assert receive(store.events.subscribe(session.id))[1] == message(1)


def test_get_returns_none_when_nothing_arrives(store, session):
    assert store.events.subscribe(session.id).get(0.01) is None


def test_a_subscription_only_sees_its_own_session(store):
    first, second = Session(), Session()
    store.sessions.create_session(first)
    store.sessions.create_session(second)
    sub_first, sub_second = store.events.subscribe(first.id), store.events.subscribe(second.id)
    store.events.publish(second.id, message(2))
    assert sub_first.get(0.01) is None
    assert receive(sub_second)[1] == message(2)


def test_subscribing_to_an_unknown_session_raises_key_error(store):
    with pytest.raises(KeyError):
        store.events.subscribe("nope")


def test_a_waiting_subscriber_wakes_when_a_message_is_published(store, session):
    subscription = store.events.subscribe(session.id)
    waiter = gevent.spawn(subscription.get, WAIT_S)
    gevent.sleep(0)
    store.events.publish(session.id, message(9))
    event = waiter.get(timeout=WAIT_S)
    assert loads(event[1]) == message(9)


# replay
def test_resuming_after_last_event_id_replays_only_what_came_later(store, session):
    ids = [store.events.publish(session.id, message(n)) for n in range(4)]
    subscription = store.events.subscribe(session.id, last_event_id=ids[1])
    assert [receive(subscription)[0] for _ in range(2)] == ids[2:]
    assert subscription.get(0.01) is None


def test_reconnecting_without_last_event_id_gets_only_undelivered_messages(store, session):
    first = store.events.subscribe(session.id)
    store.events.publish(session.id, message(1))
    receive(first)
    first.close()
    store.events.publish(session.id, message(2))
    second = store.events.subscribe(session.id)
    assert receive(second)[1] == message(2)
    assert second.get(0.01) is None


def test_replay_is_bounded(make_store):
    store = make_store(replay_max=2)
    session = Session()
    store.sessions.create_session(session)
    ids = [store.events.publish(session.id, message(n)) for n in range(5)]
    subscription = store.events.subscribe(session.id, last_event_id="0")
    assert [receive(subscription)[0] for _ in range(2)] == ids[-2:]
    assert subscription.get(0.01) is None


def test_a_replay_log_longer_than_a_list_holds_keeps_the_newest_replay_max(make_store):
    store = make_store(replay_max=REPLAY_DEQUE_FROM + 10)
    session = Session()
    store.sessions.create_session(session)
    ids = [store.events.publish(session.id, message(n)) for n in range(3 * REPLAY_DEQUE_FROM)]
    subscription = store.events.subscribe(session.id, last_event_id="0")
    assert [receive(subscription)[0] for _ in range(REPLAY_DEQUE_FROM + 10)] == ids[-(REPLAY_DEQUE_FROM + 10):]
    assert subscription.get(0.01) is None


def test_an_unreadable_last_event_id_replays_nothing(store, session):
    store.events.publish(session.id, message(1))
    assert store.events.subscribe(session.id, last_event_id="garbage").get(0.01) is None


# bounds and endings
def test_a_slow_consumer_is_cut_off_when_its_queue_is_full(make_store):
    store = make_store(queue_max=2)
    session = Session()
    store.sessions.create_session(session)
    subscription = store.events.subscribe(session.id)
    for n in range(3):
        store.events.publish(session.id, message(n))
    receive(subscription)
    receive(subscription)
    with pytest.raises(StreamClosed) as closed:
        subscription.get(WAIT_S)
    assert closed.value.reason == "slow consumer"


def test_closing_the_session_ends_its_stream(store, session):
    subscription = store.events.subscribe(session.id)
    assert store.sessions.close_session(session.id) is True
    with pytest.raises(StreamClosed) as closed:
        subscription.get(WAIT_S)
    assert closed.value.reason == "session closed"
    assert store.sessions.get_session(session.id) is None


def test_shutdown_ends_every_stream(store, session):
    subscription = store.events.subscribe(session.id)
    store.events.shutdown()
    with pytest.raises(StreamClosed):
        subscription.get(WAIT_S)


def test_an_exclusive_subscribe_refuses_a_second_stream(store, session):
    first = store.events.subscribe(session.id, exclusive=True)
    with pytest.raises(StreamConflict):
        store.events.subscribe(session.id, exclusive=True)
    store.events.publish(session.id, message(1))
    assert receive(first)[1] == message(1)


def test_a_plain_subscribe_replaces_the_old_stream(store, session):
    old = store.events.subscribe(session.id)
    new = store.events.subscribe(session.id)
    with pytest.raises(StreamClosed):
        old.get(WAIT_S)
    store.events.publish(session.id, message(1))
    assert receive(new)[1] == message(1)


def test_a_resumed_request_stream_attaches_beside_the_sessions_own_and_leaves_nothing_behind(store, session):
    own = store.events.subscribe(session.id)
    resumed = store.events.subscribe(session.id, last_event_id=join_event_id("0", "request-key"))
    slot = store.sessions.slots[session.id]
    assert slot.attached() == [own, resumed]
    resumed.close()
    assert slot.attached() == [own] and slot.request_streams is None
    own.close()
    assert slot.attached() == [] and slot.detached_at is not None


def test_streaming_session_ids_lists_attached_streams_only(store, session):
    assert streaming_session_ids(store) == []
    subscription = store.events.subscribe(session.id)
    assert streaming_session_ids(store) == [session.id]
    subscription.close()
    assert streaming_session_ids(store) == []


# expiry (idle times are moved back instead of sleeping)
def test_reap_expires_sessions_idle_past_the_ttl(make_store):
    store = make_store(session_ttl_s=60.0)
    idle, fresh = Session(), Session()
    store.sessions.create_session(idle)
    store.sessions.create_session(fresh)
    store.sessions.slots[idle.id].last_seen -= 61.0
    assert store.sessions.get_session(idle.id) is None
    assert store.sessions.reap() == 1
    assert store.sessions.session_count() == 1
    assert store.sessions.get_session(fresh.id) is fresh


def test_a_session_with_an_open_stream_never_expires(make_store):
    store = make_store(session_ttl_s=60.0)
    session = Session()
    store.sessions.create_session(session)
    store.events.subscribe(session.id)
    store.sessions.slots[session.id].last_seen -= 3600.0
    assert store.sessions.reap() == 0


def test_a_detached_session_expires_after_the_resume_window(make_store):
    store = make_store(session_ttl_s=3600.0, resume_window_s=30.0)
    session = Session()
    store.sessions.create_session(session)
    store.events.subscribe(session.id).close()
    assert store.sessions.reap() == 0
    store.sessions.slots[session.id].detached_at -= 31.0
    assert store.sessions.reap() == 1
    assert store.sessions.get_session(session.id) is None


# broadcast and cancellation
def test_broadcast_reaches_the_sessions_that_want_it(store):
    server = serve(store)
    ready, fresh = Session(initialized=True), Session()
    store.sessions.create_session(ready)
    store.sessions.create_session(fresh)
    listening, waiting = store.events.subscribe(ready.id), store.events.subscribe(fresh.id)
    server.announce_list_changed("prompt")
    assert receive(listening)[1] == {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}
    store.events.publish(fresh.id, message(1))
    assert receive(waiting)[1] == message(1)


def test_cancel_kills_the_running_request(store, session):
    server = serve(store)
    running = gevent.spawn(gevent.sleep, WAIT_S * 10)
    server.calls.add(session.id, 7, running)
    server.cancel(session.id, 7)
    running.join(timeout=WAIT_S)
    assert running.dead
    assert len(server.calls) == 0


def test_request_times_out_and_tells_the_client(store, session):
    sent = []
    with pytest.raises(RpcError) as caught:
        ask(serve(store), session, "roots/list", {}, timeout=0.01, send=sent.append)
    assert caught.value.code == REQUEST_TIMEOUT
    assert [m["method"] for m in sent] == ["roots/list", "notifications/cancelled"]
    assert sent[1]["params"]["requestId"] == sent[0]["id"]

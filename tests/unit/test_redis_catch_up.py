"""A stream's catch-up after its worker's subscriber connection came back: what nobody heard is read from the log.

The Redis store's Claims run against a fake link whose replay log is a list, so a test decides when a read fails or
how long it takes. A Sentinel failover is the case that matters: answers retried through the outage are stored on
the new master before the stream's worker has subscribed to it again, and only the catch-up read brings them.
"""

from __future__ import annotations

import logging
from typing import Any

import gevent
from gevent.event import Event
from redis.exceptions import ConnectionError as RedisConnectionError

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.metrics import instruments
from flask_mcp_gevent.store import redis_claims
from flask_mcp_gevent.store.redis_claims import Claims, RedisSubscription
from flask_mcp_gevent.store.redis_codec import event_order
from flask_mcp_gevent.store.redis_connection import OutageGuard
from tests.support.waiting import wait_until


class FakeLink:
    """Enough of RedisLink for a catch-up: the session's replay log as a list, and XRANGE reads that fail or wait."""

    def __init__(self) -> None:
        self.worker_id = "worker-1"
        self.guard = OutageGuard()
        self.replay: list[tuple[str, bytes]] = []
        self.failures = 0  # how many of the next reads fail as if Redis were away
        self.reads = 0
        self.gate: Event | None = None  # when set, a read returns only once the gate opens

    def execute(self, *command: Any) -> Any:
        """XRANGE the replay log as Redis would: what it held when the read reached it, after the start."""
        assert command[0] == "XRANGE", command
        self.reads += 1
        seen = list(self.replay)
        if self.gate is not None:
            self.gate.wait()
        if self.failures:
            self.failures -= 1
            with self.guard:  # as the link does: a lost connection is StoreUnavailable
                raise RedisConnectionError("Redis went away")
        start = command[2]  # inclusive, as the store reads it
        return [[event_id.encode(), [b"d", data]] for event_id, data in seen
                if event_order(event_id) >= event_order(start)]

    def run_each(self, name: str, runs: Any) -> list[Any]:
        """Refreshing claims finds Redis away (the catch-up must not depend on it)."""
        with self.guard:
            raise RedisConnectionError("Redis went away")


def attached_stream(link: FakeLink) -> tuple[Claims, RedisSubscription]:
    """Claims on the fake link and one stream attached to them, caught up to the log's first entry."""
    claims = Claims(link, Settings.from_mapping({"MCP_REDIS_URL": "redis://127.0.0.1:1/0"}), lambda: False)
    subscription = RedisSubscription(claims, "s" * 32, None, 100, 1 << 20)
    claims.local[subscription.key] = subscription
    link.replay.append(("1-0", b"before"))
    subscription.fill([("1-0", b"before")], "0-0")
    assert subscription.get(0) == ("1-0", b"before")
    return claims, subscription


def queued(subscription: RedisSubscription) -> list[str]:
    """The event ids waiting in a stream's queue, in order."""
    ids = []
    while (item := subscription.get(0)) is not None:
        ids.append(item[0])
    return ids


def test_a_failed_catch_up_read_is_made_again_and_live_events_wait_behind_it(monkeypatch):
    monkeypatch.setattr(redis_claims, "CATCH_UP_RETRY_MIN_S", 0.01)
    link = FakeLink()
    claims, subscription = attached_stream(link)
    # The subscriber connection is lost; an answer is stored while nobody listens; a new connection subscribes.
    link.replay.append(("2-0", b"stored while nobody listened"))
    number = claims.hold_all()
    link.replay.append(("3-0", b"heard live"))
    subscription.offer("3-0", b"heard live")
    # Its first catch-up read fails (the master still settling after a failover, a reply past the timeout).
    link.failures = 1
    claims.resync_all(number)
    assert link.reads == 2
    assert queued(subscription) == ["2-0", "3-0"]


def test_a_catch_up_read_made_before_the_new_connection_subscribed_does_not_let_live_events_go():
    link = FakeLink()
    claims, subscription = attached_stream(link)
    # Connection 1 subscribed; its catch-up read reaches Redis at once but its reply is slow.
    first = claims.hold_all()
    link.gate = Event()
    slow = gevent.spawn(claims.resync_all, first)
    wait_until(lambda: link.reads == 1, timeout=2)
    # Meanwhile connection 1 is lost, an answer is stored while nobody listens, and connection 2 subscribes and
    # hears the next answer live.
    link.replay.append(("2-0", b"stored while nobody listened"))
    second = claims.hold_all()
    link.replay.append(("3-0", b"heard live"))
    subscription.offer("3-0", b"heard live")
    # The slow reply (which saw nothing new) must not let the live event go: the stream would move past 2-0.
    link.gate.set()
    slow.join(2)
    claims.resync_all(second)
    assert queued(subscription) == ["2-0", "3-0"]


def test_a_catch_up_that_finds_the_log_trimmed_past_the_stream_is_logged_and_counted(caplog):
    link = FakeLink()
    claims, subscription = attached_stream(link)
    number = claims.hold_all()
    # While nobody listened, more answers were stored than the log keeps: 1-0 (the stream's last) and 2-0 are gone.
    link.replay[:] = [("3-0", b"kept"), ("4-0", b"kept too")]
    before = instruments().registry.get_sample_value("mcp_replay_gaps_total") or 0.0
    with caplog.at_level(logging.WARNING, logger="mcp.store"):
        claims.resync_all(number)
    assert queued(subscription) == ["3-0", "4-0"]
    assert instruments().registry.get_sample_value("mcp_replay_gaps_total") == before + 1
    assert "has dropped" in caplog.text


def test_a_catch_up_that_finds_the_streams_last_event_still_logged_reports_no_gap(caplog):
    link = FakeLink()
    claims, subscription = attached_stream(link)
    number = claims.hold_all()
    link.replay.append(("2-0", b"stored while nobody listened"))
    with caplog.at_level(logging.WARNING, logger="mcp.store"):
        claims.resync_all(number)
    assert queued(subscription) == ["2-0"]
    assert "has dropped" not in caplog.text

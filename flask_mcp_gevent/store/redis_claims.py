"""The Redis store's claims on streams: this worker's attached streams, attaching, letting go, keeping them fresh,
re-taking lost ones."""

from __future__ import annotations

import logging
import random
import secrets
from collections.abc import Callable
from typing import Any

import gevent
from gevent.event import Event

from flask_mcp_gevent.conditions import StoreUnavailable, StreamConflict
from flask_mcp_gevent.event_ids import join_event_id, report_replay_gap, split_event_id
from flask_mcp_gevent.store.redis_codec import entries_of, event_order, milliseconds, replay_position
from flask_mcp_gevent.store.redis_keys import SESSION_INDEX, WORKER_CHANNEL, session_keys
from flask_mcp_gevent.store.redis_link import RUN_BATCH, RedisLink
from flask_mcp_gevent.subscription import Subscription

log = logging.getLogger("mcp.store")

# How long a stream's claim on its session lasts without a refresh, and how often it is refreshed.
ATTACH_TTL_S = 20.0
REFRESH_EVERY_S = 5.0
# A failed catch-up read (Redis not back yet, a reply too slow) is made again, with doubling backoff.
CATCH_UP_RETRY_MIN_S = 0.1
CATCH_UP_RETRY_MAX_S = 2.0


class Claims:
    """This worker's attached streams and their claims (RedisStore's part: it sends through the store's link)."""

    def __init__(self, link: RedisLink, settings: Any, in_reader: Callable[[], bool]) -> None:
        self.link = link
        self.settings = settings
        # True in the subscriber greenlet, which must never wait on Redis.
        self.in_reader = in_reader
        self.reset()

    def reset(self) -> None:
        """No stream attached yet (after a fork too: the parent's are not this process's)."""
        self.local: dict[tuple[str, str | None], RedisSubscription] = {}
        # The subscriber connection streams hold their live events for (hold_all numbers each new one), and the
        # latest whose subscription Redis confirmed (resync_all): see _resync for why catch-ups need both.
        self.subscriber_number = 0
        self.listening_number = 0

    def attach(self, session_id: str, last_event_id: str | None, exclusive: bool) -> RedisSubscription:
        """Attach a stream, pre-loaded with what it missed since last_event_id (or never got)."""
        position, stream = split_event_id(last_event_id)
        previous = self.local.get((session_id, stream))
        if previous is not None and exclusive:
            raise StreamConflict(session_id)
        if last_event_id is not None:
            after = replay_position(position)
        elif previous is not None and previous.delivered is not None:
            after = previous.delivered
        else:
            after = ""  # the script reads what the last stream recorded as delivered
        subscription = RedisSubscription(self, session_id, stream, self.settings.queue_max,
                                         self.settings.queue_max_bytes)
        # Registered before the claim, so live events published right after it are held, not lost.
        self.local[subscription.key] = subscription
        try:
            reply = self._claim(subscription, exclusive, after)
            if reply[0] != 1:
                raise KeyError(session_id) if reply[0] == 0 else StreamConflict(session_id)
        except BaseException:
            self.unregister(subscription, restore=previous)
            raise
        if previous is not None:
            self.drop(previous, "replaced by a newer stream")
        floor = reply[2].decode()
        note_gap(session_id, floor, reply[1])
        subscription.fill(entries_of(reply[1], stream), floor)
        return subscription

    def _claim(self, subscription: RedisSubscription, exclusive: bool, after: str) -> Any:
        """Run the attach script: [1, missed entries, floor], or [0] (no session), [-1] (held elsewhere)."""
        keys = session_keys(subscription.session_id, subscription.stream)
        return self.link.run(
            "attach", keys,
            [subscription.owner, "1" if exclusive else "0", after, milliseconds(ATTACH_TTL_S),
             milliseconds(self.settings.session_ttl_s), subscription.session_id, WORKER_CHANNEL,
             self.link.worker_id, subscription.stream or "", *self._claim_holder_alive(keys.claim)],
        )

    def unregister(self, subscription: RedisSubscription, restore: RedisSubscription | None = None) -> None:
        """Drop a subscription from this worker's routing table if it is still there."""
        if self.local.get(subscription.key) is subscription:
            del self.local[subscription.key]
            if restore is not None and restore.reason is None:
                self.local[subscription.key] = restore

    def forget(self, subscription: RedisSubscription) -> None:
        """Stop routing to a subscription and, once, give up its claim."""
        self.unregister(subscription)
        if subscription.released:
            return
        subscription.released = True
        if self.in_reader():
            gevent.spawn(self._detach, subscription)  # the reader must never wait on Redis
        else:
            self._detach(subscription)

    def end_session(self, session_id: str, reason: str) -> None:
        """End this worker's streams of a session (its own and request streams)."""
        for key in [key for key in self.local if key[0] == session_id]:
            self.drop(self.local[key], reason)

    def drop(self, subscription: RedisSubscription, reason: str) -> None:
        """End a local stream whose session is gone or whose claim is held elsewhere."""
        subscription.released = True
        self.unregister(subscription)
        subscription.end(reason)

    def hold_all(self) -> int:
        """Have every local stream hold live events back until it caught up; the new subscriber connection's number."""
        self.subscriber_number += 1
        for subscription in list(self.local.values()):
            subscription.hold()
        return self.subscriber_number

    def refresh(self) -> None:
        """Refresh every local stream's claim and TTLs; end those whose session is gone or claimed elsewhere."""
        # A stream still attaching holds no claim yet (the one it replaces does): refreshing it would read as
        # "claimed elsewhere" and end it. Its attach sets a fresh claim anyway.
        subscriptions = [subscription for subscription in self.local.values() if subscription.loaded.is_set()]
        ttl_ms = milliseconds(self.settings.session_ttl_s)
        codes = self.link.run_each("refresh", [
            (session_keys(subscription.session_id, subscription.stream),
             [subscription.owner, milliseconds(ATTACH_TTL_S), ttl_ms,
              (subscription.delivered if subscription.stream is None else None) or ""])
            for subscription in subscriptions])
        # The sessions whose TTL moved move in the index too (the index is in another hash slot).
        kept = sorted({subscription.session_id for subscription, code in zip(subscriptions, codes, strict=True)
                       if code == 4})
        for start in range(0, len(kept), RUN_BATCH):
            self.link.run("touch", [SESSION_INDEX], [ttl_ms, *kept[start:start + RUN_BATCH]])
        for subscription, code in zip(subscriptions, codes, strict=True):
            if code == 0:
                self.drop(subscription, "session closed")
            elif code == 3:
                self.drop(subscription, "replaced by a newer stream")
            elif code == 2 and self.local.get(subscription.key) is subscription:
                self._reclaim(subscription)

    def _reclaim(self, subscription: RedisSubscription) -> None:
        """Take back a claim that vanished (Redis restarted, or was away past the claim's TTL) and catch up."""
        claim = session_keys(subscription.session_id, subscription.stream).claim
        self.link.execute("SET", claim, subscription.owner, "PX", milliseconds(ATTACH_TTL_S), "NX")
        if self.local.get(subscription.key) is not subscription:
            self._detach(subscription)  # it closed while the claim was being re-taken: let go again
            return
        gevent.spawn(self.catch_up, [subscription], self.subscriber_number)

    def resync_all(self, number: int) -> None:
        """Once subscriber connection number subscribed: re-claim every local stream and queue what it missed."""
        self.listening_number = number
        try:
            self.refresh()
        except StoreUnavailable:
            pass  # the refresher tries again; the catch-up below does not depend on it
        except Exception:
            log.exception("refreshing stream claims failed")
        self.catch_up(list(self.local.values()), number)

    def catch_up(self, subscriptions: list[RedisSubscription], number: int) -> None:
        """Catch streams up from the replay log, reading again with backoff until caught up, closed, or taken over."""
        delay = CATCH_UP_RETRY_MIN_S
        while True:
            behind = []
            for subscription in subscriptions:
                try:
                    # A failed read keeps holding live events: letting them go first would skip, for good, what was
                    # published while nobody listened.
                    if not self._resync(subscription, number):
                        behind.append(subscription)
                except Exception:
                    log.exception("resynchronising the stream of session %s failed", subscription.session_id[:8])
            if not behind or number != self.subscriber_number:
                return
            gevent.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, CATCH_UP_RETRY_MAX_S)
            subscriptions = behind

    def _resync(self, subscription: RedisSubscription, number: int) -> bool:
        """Queue the replay entries a stream has not queued yet, then its held live ones; False to read again."""
        subscription.loaded.wait(self.settings.redis_timeout_s * 2)
        if self.local.get(subscription.key) is not subscription:
            return True
        if not subscription.loaded.is_set():
            return False  # still attaching
        # Only a read made after connection `number` subscribed covers everything nobody heard, so held events go
        # only on such a read while that connection is current; a newer one (or one not subscribed yet) catches up.
        if number != self.subscriber_number or number != self.listening_number:
            return True
        ms, seq = subscription.last_queued
        start = f"{ms}-{seq}"  # itself first while the log still holds it (see note_gap)
        subscription.hold()
        try:
            raw = self.link.execute("XRANGE", session_keys(subscription.session_id).replay, start, "+")
        except StoreUnavailable:
            return False  # still holding its live events: read again
        except BaseException:
            subscription.fill([])
            raise
        if number == self.subscriber_number:
            note_gap(subscription.session_id, start, raw)
            subscription.fill(entries_of(raw, subscription.stream), bounded=True)
        return True

    def _claim_holder_alive(self, claim: str) -> list[str]:
        """The attach script's last argument on a cluster: the claim's worker if it is alive, else ''."""
        # Elsewhere the script asks PUBSUB NUMSUB itself; on a cluster that counts one node's subscribers only.
        if not self.settings.redis_cluster:
            return []
        holder = self.link.execute("GET", claim)
        if holder is None:
            return [""]
        worker = holder.decode().partition("|")[0]
        return [worker if self.link.subscribers(WORKER_CHANNEL + worker) > 0 else ""]

    def _detach(self, subscription: RedisSubscription) -> None:
        """Let go of the claim; the session's own stream records what it delivered and starts the resume window."""
        try:
            self.link.run(
                "detach", session_keys(subscription.session_id, subscription.stream),
                [subscription.owner, subscription.delivered or "", int(self.settings.resume_window_s * 1000),
                 "1" if subscription.stream is None else "0"],
            )
        except StoreUnavailable:
            log.info("could not release stream of session %s: Redis unreachable", subscription.session_id[:8])


def note_gap(session_id: str, after: str, entries: list[Any]) -> None:
    """Report a replay read from after (inclusive) that no longer starts at after: the log dropped events since."""
    # The log drops its oldest entries first, so while it holds after itself it holds everything later too.
    if entries and after != "0-0" and entries[0][0].decode() != after:
        report_replay_gap(session_id, after)


class RedisSubscription(Subscription):
    """A stream on this worker: replayed events first, then live ones from the subscriber greenlet."""

    def __init__(self, claims: Claims, session_id: str, stream: str | None, maxsize: int, max_bytes: int) -> None:
        super().__init__(session_id, stream, maxsize, max_bytes)
        self.claims = claims
        self.owner = claims.link.worker_id + "|" + secrets.token_hex(8)
        self.last_queued: tuple[int, int] = (0, 0)
        self.delivered: str | None = None
        self.released = False
        # While replay is being read, live events wait here so nothing jumps the queue.
        self.held: list[tuple[str, bytes]] | None = []
        self.held_bytes = 0
        self.loaded = Event()

    @property
    def key(self) -> tuple[str, str | None]:
        """Where this worker routes the stream's live events from: (session id, request stream)."""
        return self.session_id, self.stream

    def offer(self, event_id: str, data: bytes) -> None:
        """Queue a live event once, in order, or hold it back while missed ones are read (bounded alike)."""
        if self.reason is not None:
            return
        if self.held is not None:
            if len(self.held) >= self.maxsize or (self.held and self.held_bytes + len(data) > self.max_bytes):
                self.cut_off()
            else:
                self.held.append((event_id, data))
                self.held_bytes += len(data)
            return
        order = event_order(event_id)
        if order > self.last_queued:
            self.last_queued = order
            super().offer(event_id, data)

    def hold(self) -> None:
        """Start holding live events back while missed ones are read from the replay log."""
        if self.held is None:
            self.held = []
            self.held_bytes = 0

    def fill(self, entries: list[tuple[str, bytes]], floor: str | None = None, bounded: bool = False) -> None:
        """Queue missed events after floor, then the held live ones (bounded: within the queue's bounds)."""
        if floor is not None:
            self.last_queued = max(self.last_queued, event_order(floor))
        held, self.held, self.held_bytes = self.held or [], None, 0
        for event_id, data in entries:
            order = event_order(event_id)
            # A new stream's replay bypasses the bounds (the log is capped); a catch-up after a lost subscriber
            # connection is live traffic and counts.
            if bounded:
                self.offer(event_id, data)
            elif order > self.last_queued and self.reason is None:
                self.last_queued = order
                self.enqueue((event_id, data))
        for event_id, data in held:
            self.offer(event_id, data)
        self.loaded.set()

    def cut_off(self) -> None:
        """Drop what a stream whose client stopped reading queued, let go of its claim, and cut it off."""
        self.queue.clear()
        self.queued_bytes = 0
        self.held = None
        self.claims.forget(self)
        super().cut_off()

    def get(self, timeout: float) -> tuple[str, bytes] | None:
        """Return the next (event id, json), None on timeout; raise StreamClosed once ended."""
        item = self.next_item(timeout)
        if item is None:
            return None
        self.delivered = item[0]
        return join_event_id(item[0], self.stream), item[1]

    def close(self, reason: str = "client gone") -> None:
        """Let go of the stream; the session's own stream starts the resume window."""
        if self.reason is None:
            self.reason = reason
        self.claims.forget(self)

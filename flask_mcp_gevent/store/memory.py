"""The in-memory store: one worker's sessions in a dict, their event logs beside them, and a fleet of one.

All in one worker process (more workers need the Redis store); every structure is bounded, in count and bytes.
MemorySessions and MemoryEvents share the session slots: a session, its replay log and its attached streams.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gevent

from flask_mcp_gevent.conditions import CapacityError, QuotaFull, StreamConflict
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.event_ids import join_event_id, report_replay_gap, split_event_id
from flask_mcp_gevent.session import Session, SessionChange, SessionUpdate
from flask_mcp_gevent.store.ports import EventLog, FleetBus, FleetWorker, SessionStore
from flask_mcp_gevent.subscription import Subscription

if TYPE_CHECKING:
    from flask_mcp_gevent.config import Settings

__all__ = ["LocalFleet", "MemoryEvents", "MemorySessions", "MemoryStore", "UsedOnce"]

log = logging.getLogger("mcp.store")
# Secrets the fleet shares (shared_secret): 256 random bits.
SHARED_SECRET_BYTES = 32
# A replay log this long becomes a deque, which drops its oldest entry in O(1). Shorter ones, most sessions' (an
# idle one keeps its initialize answer), stay lists: a deque holds a 64-slot block from its first entry (0.7 KiB).
REPLAY_DEQUE_FROM = 64
# (event id, JSON, request stream or None for the session's own stream)
ReplayEntry = tuple[str, bytes, str | None]


class MemorySubscription(Subscription):
    """A stream attached to one session slot."""

    def __init__(self, slot: SessionSlot, maxsize: int, stream: str | None, max_bytes: int) -> None:
        super().__init__(slot.session.id, stream, maxsize, max_bytes)
        self.slot = slot

    def get(self, timeout: float) -> tuple[str, bytes] | None:
        """Return the next event, None on timeout; raise StreamClosed once ended."""
        item = self.next_item(timeout)
        self.slot.touch()
        if item is not None and self.stream is None:
            self.slot.delivered = int(item[0])
        return item

    def close(self, reason: str = "client gone") -> None:
        """Detach from the slot; the session waits resume_window_s for a reconnect."""
        if self.slot.detach(self) and self.stream is None:
            self.slot.detached_at = self.slot.clock()
        if self.reason is None:
            self.reason = reason


class SessionSlot:
    """One session with its replay log and the streams attached to it, if any."""

    __slots__ = ("session", "owner", "replay", "replay_bytes", "replay_max", "replay_max_bytes", "next_event_id",
                 "delivered", "own_stream", "request_streams", "last_seen", "detached_at", "pending", "clock")

    def __init__(self, session: Session, owner: str | None, replay_max: int, replay_max_bytes: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.session = session
        # Whose quota the session counts against (None: only the total applies).
        self.owner = owner
        self.clock = clock
        # The replay log, oldest first.
        self.replay: list[ReplayEntry] | deque[ReplayEntry] = []
        self.replay_bytes = 0
        self.replay_max = replay_max
        self.replay_max_bytes = replay_max_bytes
        self.next_event_id = 1
        self.delivered = 0
        # The attached streams: the session's own, and request streams (Streamable HTTP POST streams picked up again
        # with Last-Event-ID) by their key, in a dict made for the first (a dict with an entry is 0.2 KiB).
        self.own_stream: MemorySubscription | None = None
        self.request_streams: dict[str, MemorySubscription] | None = None
        self.last_seen = clock()
        self.detached_at: float | None = None
        # Until the client comes back after initialize, the session lives only the short pending TTL.
        self.pending = True

    def touch(self) -> None:
        """Mark the session active now: that ends a resume window and the short pending TTL after initialize."""
        self.last_seen = self.clock()
        self.detached_at = None
        self.pending = False

    def stream(self, key: str | None) -> MemorySubscription | None:
        """The stream attached under key (None: the session's own), if any."""
        if key is None:
            return self.own_stream
        return self.request_streams.get(key) if self.request_streams is not None else None

    def attach(self, subscription: MemorySubscription) -> None:
        """Attach a stream under its key, in place of any attached there."""
        if subscription.stream is None:
            self.own_stream = subscription
        elif self.request_streams is None:
            self.request_streams = {subscription.stream: subscription}
        else:
            self.request_streams[subscription.stream] = subscription

    def detach(self, subscription: MemorySubscription) -> bool:
        """Detach a stream, unless another took its place; whether it was attached."""
        key = subscription.stream
        if key is None:
            if self.own_stream is not subscription:
                return False
            self.own_stream = None
            return True
        streams = self.request_streams
        if streams is None or streams.get(key) is not subscription:
            return False
        del streams[key]
        if not streams:
            self.request_streams = None
        return True

    def attached(self) -> list[MemorySubscription]:
        """Every attached stream."""
        streams = [] if self.own_stream is None else [self.own_stream]
        if self.request_streams is not None:
            streams.extend(self.request_streams.values())
        return streams

    def remember(self, event_id: str, data: bytes, stream: str | None) -> None:
        """Append to the replay log, dropping the oldest entries past its length or bytes (never the newest)."""
        replay = self.replay
        if type(replay) is list and len(replay) >= REPLAY_DEQUE_FROM:
            replay = self.replay = deque(replay)
        replay.append((event_id, data, stream))
        self.replay_bytes += len(data)
        while len(replay) > self.replay_max or (self.replay_bytes > self.replay_max_bytes and len(replay) > 1):
            self.replay_bytes -= len(replay[0][1])
            del replay[0]


class MemorySessions(SessionStore):
    """This worker's sessions and their call slots; expired ones are reaped by a greenlet of its own."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        # Every expiry decision reads this clock, so tests can step time instead of sleeping.
        self.clock = clock
        self.slots: dict[str, SessionSlot] = {}
        self._reaper: gevent.Greenlet | None = None
        # How many live sessions each owner holds: close_session counts one down and drops an owner at zero.
        self.sessions_per_owner: dict[str, int] = {}
        self.calls_running: dict[str, int] = {}

    @property
    def pending_ttl_s(self) -> float:
        """How long a session that never came back after initialize lives (never longer than the full TTL)."""
        return min(self.settings.pending_session_ttl_s, self.settings.session_ttl_s)

    def create_session(self, session: Session, owner: str | None = None, owner_limit: int = 0) -> None:
        """Store a new session; CapacityError at MCP_MAX_SESSIONS, QuotaFull when owner holds owner_limit."""
        self.reap()  # expired sessions close first, so the counts below are of live ones
        if len(self.slots) >= self.settings.max_sessions:
            raise CapacityError(f"this server holds its maximum of {self.settings.max_sessions} sessions")
        # gevent never switches between these checks and the insert, so no lock is needed.
        if owner is not None and self.sessions_per_owner.get(owner, 0) >= owner_limit:
            raise QuotaFull(owner)
        self.slots[session.id] = SessionSlot(session, owner, self.settings.replay_max,
                                            self.settings.replay_max_bytes, self.clock)
        if owner is not None:
            self.sessions_per_owner[owner] = self.sessions_per_owner.get(owner, 0) + 1
        self._start_reaper()

    def take_call_slot(self, session_id: str, limit: int) -> str | None:
        """Count one more call of the session, unless it already runs limit."""
        count = self.calls_running.get(session_id, 0)
        if count >= limit:
            return None
        self.calls_running[session_id] = count + 1
        return "local"

    def give_back_call_slot(self, session_id: str, token: str) -> None:
        """Count one call fewer; a session with none running leaves nothing behind."""
        count = self.calls_running.get(session_id, 0) - 1
        if count > 0:
            self.calls_running[session_id] = count
        else:
            self.calls_running.pop(session_id, None)

    def get_session(self, session_id: str, accept: Callable[[Session], bool] | None = None) -> Session | None:
        """Return the live session and mark it active (unless accept refuses it)."""
        session = self.peek_session(session_id)
        if session is None or (accept is not None and not accept(session)):
            return None
        self.slots[session_id].touch()
        return session

    def peek_session(self, session_id: str) -> Session | None:
        """Return the live session without marking it active."""
        slot = self.slots.get(session_id)
        if slot is None or self._expired(slot, self.clock()):
            return None
        return slot.session

    def update_session(self, session_id: str, change: SessionChange) -> SessionUpdate:
        """Change the shared session object in place: nothing else runs in between, so it is atomic."""
        session = self.peek_session(session_id)
        if session is None:
            return SessionUpdate(False, None)
        return SessionUpdate(change.apply(session), session)

    def close_session(self, session_id: str) -> bool:
        """Remove the session and end its streams."""
        slot = self.slots.pop(session_id, None)
        if slot is None:
            return False
        if slot.owner is not None:
            left = self.sessions_per_owner.pop(slot.owner) - 1
            if left:
                self.sessions_per_owner[slot.owner] = left
        for subscription in slot.attached():
            subscription.end("session closed")
        return True

    def session_count(self) -> int:
        """How many sessions this worker holds."""
        return len(self.slots)

    def reap(self) -> int:
        """Drop expired sessions; return how many."""
        now = self.clock()
        expired = [sid for sid, slot in self.slots.items() if self._expired(slot, now)]
        for sid in expired:
            self.close_session(sid)
        if expired:
            log.info("expired %d idle session(s)", len(expired))
        return len(expired)

    def stop_reaping(self) -> None:
        """Stop the expiry greenlet (the worker is stopping)."""
        if self._reaper is not None:
            self._reaper.kill(block=False)

    def _expired(self, slot: SessionSlot, now: float) -> bool:
        """A session expires when idle past the TTL, or detached past the resume window."""
        if slot.own_stream is not None or slot.request_streams is not None:
            return False
        if slot.detached_at is not None and now - slot.detached_at > self.settings.resume_window_s:
            return True
        ttl = self.pending_ttl_s if slot.pending else self.settings.session_ttl_s
        return now - slot.last_seen > ttl

    def _start_reaper(self) -> None:
        """Start the periodic expiry greenlet on first use (never at import time)."""
        if self._reaper is None or self._reaper.dead:
            self._reaper = gevent.spawn(self._reap_forever)

    def _reap_forever(self) -> None:
        """Expire idle sessions every few seconds."""
        interval = max(0.5, min(self.pending_ttl_s, self.settings.resume_window_s or 30.0, 30.0) / 4)
        while True:
            gevent.sleep(interval)
            try:
                self.reap()
            except Exception:
                log.exception("session reaper failed")


class MemoryEvents(EventLog):
    """Each session's replay log and attached streams, in the slots MemorySessions keeps."""

    def __init__(self, sessions: MemorySessions) -> None:
        self.sessions = sessions
        self.settings = sessions.settings

    def publish(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Append to the replay log and hand to the attached stream, if any."""
        slot = self.sessions.slots.get(session_id)
        if slot is None:
            return None
        event_id = join_event_id(str(slot.next_event_id), stream)
        slot.next_event_id += 1
        data = dumps(message)
        slot.remember(event_id, data, stream)
        subscription = slot.stream(stream)
        if subscription is not None:
            subscription.offer(event_id, data)
        return event_id

    def subscribe(self, session_id: str, last_event_id: str | None = None, *, exclusive: bool = False
                  ) -> Subscription:
        """Attach a stream, pre-loaded with what it missed since last_event_id (or never got)."""
        slot = self.sessions.slots.get(session_id)
        if slot is None:
            raise KeyError(session_id)
        position, stream = split_event_id(last_event_id)
        current = slot.stream(stream)
        if current is not None:
            if exclusive:
                raise StreamConflict(session_id)
            current.end("replaced by a newer stream")
        after = slot.delivered if last_event_id is None else parse_position(position)
        subscription = MemorySubscription(slot, self.settings.queue_max, stream, self.settings.queue_max_bytes)
        # Positions count every event of the session: a first one kept past after + 1 means some were dropped.
        if 0 < after and slot.replay and parse_position(split_event_id(slot.replay[0][0])[0]) > after + 1:
            report_replay_gap(session_id, str(after))
        for event_id, data, event_stream in slot.replay:
            if event_stream == stream and parse_position(split_event_id(event_id)[0]) > after:
                subscription.enqueue((event_id, data))
        slot.attach(subscription)
        slot.touch()
        return subscription

    def broadcast_session_ids(self) -> list[str]:
        """Every session here, streaming or not: a broadcast waits in the replay log of those without a stream."""
        return list(self.sessions.slots)

    def shutdown(self) -> None:
        """End every stream so the worker can exit promptly."""
        for slot in list(self.sessions.slots.values()):
            for subscription in slot.attached():
                subscription.end("server shutting down")
        self.sessions.stop_reaping()


class LocalFleet(FleetBus):
    """A fleet of one worker: nothing to tell anyone; consumed requests and shared secrets in this process."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        # Multi-round requests made single-use, in this process only: several workers without Redis keep their own.
        self.used_rounds = UsedOnce(settings.request_state_used_max, clock)
        self.secrets: dict[str, bytes] = {}

    def serve(self, worker: FleetWorker) -> None:
        """Nothing to hand: no other worker sends anything."""

    def shared_secret(self, name: str) -> bytes:
        """A random secret for name, the same for every caller in this process."""
        return self.secrets.setdefault(name, secrets.token_bytes(SHARED_SECRET_BYTES))

    def use_once(self, rounds_id: bytes, ttl_s: float) -> bool:
        """Record the id in this process's bounded map (CapacityError when full of live ones)."""
        return self.used_rounds.use(rounds_id, ttl_s)

    def is_used(self, rounds_id: bytes) -> bool:
        """Whether this process recorded the id and it has not expired."""
        return self.used_rounds.holds(rounds_id)


class MemoryStore:
    """The single-worker store: its sessions, their event logs, and a fleet of one."""

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.sessions = MemorySessions(settings, clock)
        self.events = MemoryEvents(self.sessions)
        self.fleet = LocalFleet(settings, clock)

    def stop(self) -> None:
        """Stop the store's greenlets (tests; a worker simply exits)."""
        self.sessions.stop_reaping()


def parse_position(value: str | None) -> int:
    """Read the position part of a Last-Event-ID; an unreadable one replays nothing rather than everything."""
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 1 << 62


class UsedOnce:
    """Ids used once, remembered in this process until they expire: the memory store's record of consumed requests."""

    def __init__(self, max_ids: int, clock: Callable[[], float] = time.monotonic) -> None:
        """Hold at most max_ids at once; clock is injectable so tests can step time."""
        self.max_ids = max_ids
        self.clock = clock
        # Oldest first: with one lifetime for all (the state's), the first entry is also the first to expire.
        self.expiries: OrderedDict[bytes, float] = OrderedDict()

    def use(self, used_id: bytes, ttl_s: float) -> bool:
        """Record an id as used for ttl_s seconds: True the first time, False while it is remembered."""
        # gevent never switches in here, so two greenlets cannot both see an id as new.
        if self.holds(used_id):
            return False
        # When full, refuse rather than forget a live id early: a forgotten id could be used again.
        if len(self.expiries) >= self.max_ids:
            raise CapacityError(f"this worker remembers its maximum of {self.max_ids} consumed requests "
                                "(MCP_REQUEST_STATE_USED_MAX) until they expire")
        self.expiries[used_id] = self.clock() + ttl_s
        self.expiries.move_to_end(used_id)  # an expired entry left behind a longer-lived one is renewed at the end
        return True

    def holds(self, used_id: bytes) -> bool:
        """Whether the id is remembered: by its own expiry, as an entry of a shorter lifetime may sit behind."""
        now = self.clock()
        # The ids whose time is over go first, oldest first, up to the first one still remembered.
        while self.expiries:
            oldest, until = next(iter(self.expiries.items()))
            if until > now:
                break
            del self.expiries[oldest]
        expiry = self.expiries.get(used_id)
        return expiry is not None and expiry > now

    def __len__(self) -> int:
        """How many ids are remembered."""
        return len(self.expiries)

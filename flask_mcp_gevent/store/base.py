"""The hub contract both backends (memory, redis) implement: how sessions are stored and messages reach their streams.

Also the event-id helpers and the hub's exceptions; subscriptions are in subscription.py,
a worker's own calls in ../worker_calls.py.
"""

from __future__ import annotations

import logging
import random
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gevent

from flask_mcp_gevent.metrics import instruments
from flask_mcp_gevent.session import Session, SessionChange, SessionUpdate
from flask_mcp_gevent.store.subscription import Subscription
from flask_mcp_gevent.worker_calls import InflightCalls, PendingRequests

if TYPE_CHECKING:
    from flask_mcp_gevent.config import Settings
    from flask_mcp_gevent.tasks.store import TaskStore

__all__ = ["CapacityError", "Store", "StoreUnavailable", "QuotaFull", "StreamConflict"]

log = logging.getLogger("mcp.store")


# Retrying an acknowledged answer through a store outage: the first wait between attempts, and the longest.
DELIVERY_BACKOFF_MIN_S = 0.1
DELIVERY_BACKOFF_MAX_S = 2.0
# Request ids are the client's: at most this much of one goes into a log line, escaped by repr().
MAX_LOGGED_ID_CHARS = 40

# Event ids are "<position>" on a session's own stream and "<position>/<stream>" on a request's stream, so a
# Last-Event-ID alone says which stream to resume.
STREAM_SEPARATOR = "/"
# Secrets the fleet shares (shared_secret): 256 random bits.
SHARED_SECRET_BYTES = 32


def join_event_id(position: str, stream: str | None) -> str:
    """Build the event id of an event at position on stream (None: the session's own stream)."""
    return position if stream is None else f"{position}{STREAM_SEPARATOR}{stream}"


def split_event_id(event_id: str | None) -> tuple[str | None, str | None]:
    """Split an event id into its position and its stream (None: the session's own stream)."""
    if event_id is None:
        return None, None
    position, _, stream = event_id.partition(STREAM_SEPARATOR)
    return position, (stream or None)


def report_replay_gap(session_id: str, after: str) -> None:
    """Log and count a stream that resumes after an event its replay log no longer holds."""
    instruments().replay_gap()
    log.warning("stream of session %s resumes after event %s, which its replay log has dropped: events published "
                "since may be lost (raise MCP_REPLAY_MAX or MCP_REPLAY_MAX_BYTES)", session_id[:8],
                repr(after)[:MAX_LOGGED_ID_CHARS])


def answered(message: Any) -> str:
    """Name what an answer answers, for a log line: its request id (escaped and cut short), or a batch."""
    if isinstance(message, list):
        return f"a batch of {len(message)}"
    request_id = message.get("id") if isinstance(message, dict) else None
    return "request " + repr(request_id)[:MAX_LOGGED_ID_CHARS]


class CapacityError(RuntimeError):
    """The hub holds as many sessions as it may."""


class QuotaFull(CapacityError):
    """The session's owner (a principal, or an anonymous client's address) holds as many sessions as it may."""


class StoreUnavailable(RuntimeError):
    """The hub's backing store cannot be reached right now."""


class StreamConflict(RuntimeError):
    """The session already has a stream open and may not have a second one."""


class Store(ABC):
    """Sessions, delivery, replay, server-to-client requests and cancellation."""

    # True when answers published after this worker exits still reach their clients (through another worker).
    outlives_worker = False
    # The tasks extension's tasks, each backend's own (tasks/store.py; the Redis hub's are in Redis:
    # tasks/redis_store.py).
    tasks: TaskStore

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.inflight = InflightCalls()
        self.pending = PendingRequests()
        self._secrets: dict[str, bytes] = {}
        # This worker's receiver of fleet-wide notifications (its listen streams, set by the dispatcher); the hub
        # never reads them.
        self.worker_listener: Callable[[dict[str, Any]], None] | None = None

    # sessions
    @abstractmethod
    def create_session(self, session: Session, owner: str | None = None, owner_limit: int = 0) -> None:
        """Store a new session for pending_ttl_s until it is used; CapacityError when full, QuotaFull at owner_limit."""

    @property
    def pending_ttl_s(self) -> float:
        """How long a session that never came back after initialize lives (never longer than the full TTL)."""
        return min(self.settings.pending_session_ttl_s, self.settings.session_ttl_s)

    @abstractmethod
    def get_session(self, session_id: str, accept: Callable[[Session], bool] | None = None) -> Session | None:
        """Load a session and refresh its idle timer; None if unknown, expired or refused by accept (timer left)."""

    def peek_session(self, session_id: str) -> Session | None:
        """Load a session without refreshing its idle timer (for bookkeeping, not for client requests)."""
        return self.get_session(session_id)

    @abstractmethod
    def update_session(self, session_id: str, change: SessionChange) -> SessionUpdate:
        """Apply a change to the stored session in one atomic step, so concurrent changes never undo each other."""

    @abstractmethod
    def close_session(self, session_id: str) -> bool:
        """End a session and its stream; return whether it existed."""

    @abstractmethod
    def session_count(self) -> int:
        """How many sessions exist."""

    # concurrent tool calls per session (counted fleet-wide where the hub is shared)
    @abstractmethod
    def take_call_slot(self, session_id: str, limit: int) -> str | None:
        """Take one of a session's limit call slots; return its token, or None when all are taken."""

    # Free when this returns, so before the call's answer is written: a client that reads the answer and calls
    # again at once is not refused for a slot still counted.
    @abstractmethod
    def give_back_call_slot(self, session_id: str, token: str) -> None:
        """Free a slot taken with take_call_slot."""

    def get_own_session(self, session_id: str, transport: str, principal: str | None) -> Session | None:
        """Load a session of this transport and principal; anyone else's is None, its idle timer left alone."""
        return self.get_session(
            session_id, accept=lambda stored: stored.transport == transport and stored.principal == principal)

    # delivery
    @abstractmethod
    def publish(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Queue a message for a stream of the session (None: its own) and its replay log; return its event id."""

    # Every attempt carries one token, so one that reached the store although its reply was lost is not appended
    # again; past MCP_DELIVERY_RETRY_S the answer is logged as lost, never dropped without a trace.
    def deliver(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Publish an answer the client was promised (a legacy 202), retrying with backoff through a store outage."""
        token = self.delivery_token()
        started = time.monotonic()
        delay = DELIVERY_BACKOFF_MIN_S
        while True:
            try:
                event_id = self.publish_once(session_id, message, stream, token)
            except StoreUnavailable:
                remaining = started + self.settings.delivery_retry_s - time.monotonic()
                if remaining <= 0:
                    log.error("gave up storing the answer to %s of session %s: the session store stayed "
                              "unreachable for MCP_DELIVERY_RETRY_S (%g s); the client may never get it",
                              answered(message), session_id[:8], self.settings.delivery_retry_s)
                    return None
                gevent.sleep(min(remaining, delay * (0.5 + random.random())))
                delay = min(delay * 2, DELIVERY_BACKOFF_MAX_S)
                continue
            if delay > DELIVERY_BACKOFF_MIN_S:
                log.info("answer to %s of session %s stored after %.1f s of retries", answered(message),
                         session_id[:8], time.monotonic() - started)
            return event_id

    def delivery_token(self) -> str:
        """A token that names one delivery among every delivery of the fleet (64 random bits)."""
        return secrets.token_hex(8)

    def publish_once(self, session_id: str, message: Any, stream: str | None, token: str) -> str | None:
        """Publish a message at most once per token (a store that can fail after storing overrides this)."""
        return self.publish(session_id, message, stream)

    @abstractmethod
    def subscribe(
        self, session_id: str, last_event_id: str | None = None, *, exclusive: bool = False
    ) -> Subscription:
        """Attach a stream after last_event_id on its stream, replacing an attached one (exclusive: StreamConflict)."""

    @abstractmethod
    def broadcast_session_ids(self) -> list[str]:
        """The sessions a broadcast from this worker must reach: every live one, with a stream or not."""

    # control
    def resolve(self, session_id: str, response: dict[str, Any]) -> bool:
        """Route a client's answer to the tool waiting for it, on whichever worker (one worker here: this one)."""
        return self.pending.resolve(session_id, response)

    def cancel(self, session_id: str, request_id: Any) -> None:
        """Cancel a running request on whichever worker runs it (one worker here: this one)."""
        self.inflight.cancel(session_id, request_id)

    # notifications for every worker's listen streams (an opaque dict to each worker's listener)
    def tell_every_worker(self, message: dict[str, Any]) -> None:
        """Hand a notification once to every worker's handler (one worker here: this one)."""
        self.hand_to_this_worker(message)

    def hand_to_this_worker(self, message: dict[str, Any]) -> None:
        """Give a notification to this worker's listener; a failing listener is logged, never raised to the sender."""
        handler = self.worker_listener
        if handler is None:
            return
        try:
            handler(message)
        except Exception:
            log.exception("handing notification %s to this worker failed", message.get("method"))

    # run-time registry changes
    def share_registry(self, registry: Any) -> None:
        """Take this worker's run-time registry changes to every worker (one worker here: nothing to do)."""
        return None

    def prepare(self) -> None:
        """Get ready to serve, before a worker accepts its first connection (nothing to do here)."""
        return None

    # secrets every worker of the fleet must share
    def shared_secret(self, name: str) -> bytes:
        """A random secret for name, the same for every caller that shares this hub (here: this process only)."""
        return self._secrets.setdefault(name, secrets.token_bytes(SHARED_SECRET_BYTES))

    # multi-round requests made single-use (ctx.consume_answers): recorded where every worker of the fleet sees them
    @abstractmethod
    def use_once(self, rounds_id: bytes, ttl_s: float) -> bool:
        """Record an id as used for ttl_s seconds: True the first time, False while recorded; CapacityError if full."""

    @abstractmethod
    def is_used(self, rounds_id: bytes) -> bool:
        """Whether use_once recorded this id and it has not expired yet."""

    # operations
    def ready(self) -> bool:
        """True when the hub's dependencies answer."""
        return True

    @abstractmethod
    def shutdown(self) -> None:
        """Close every stream promptly (on SIGTERM)."""

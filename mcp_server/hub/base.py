"""The hub contract: how sessions are stored and how messages reach their streams.

Both backends (memory, redis) implement `Hub`; the parts that live in one worker
whatever the backend (running calls that can be cancelled, tools waiting for a
client's answer) are shared here.
"""

from __future__ import annotations

import logging
import random
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import gevent
from gevent.event import AsyncResult

from mcp_server.hub.mailbox import Empty, Mailbox
from mcp_server.session import Session, SessionChange, SessionUpdate

if TYPE_CHECKING:
    from mcp_server.config import Settings

__all__ = [
    "CapacityError",
    "Hub",
    "HubUnavailable",
    "InflightCalls",
    "QuotaFull",
    "StreamClosed",
    "StreamConflict",
    "Subscription",
]

log = logging.getLogger("mcp.hub")


# Retrying an acknowledged answer through a store outage: the first wait between attempts, and the longest.
DELIVERY_BACKOFF_MIN_S = 0.1
DELIVERY_BACKOFF_MAX_S = 2.0
# Request ids are the client's: at most this much of one goes into a log line, escaped by repr().
MAX_LOGGED_ID_CHARS = 40

# Event ids are "<position>" on a session's own stream and "<position>/<stream>" on a request's stream, so a
# Last-Event-ID alone says which stream to resume.
STREAM_SEPARATOR = "/"
# Queued behind a stream's last event when it ends.
STREAM_END = object()


def join_event_id(position: str, stream: str | None) -> str:
    """Build the event id of an event at position on stream (None: the session's own stream)."""
    return position if stream is None else f"{position}{STREAM_SEPARATOR}{stream}"


def split_event_id(event_id: str | None) -> tuple[str | None, str | None]:
    """Split an event id into its position and its stream (None: the session's own stream)."""
    if event_id is None:
        return None, None
    position, _, stream = event_id.partition(STREAM_SEPARATOR)
    return position, (stream or None)


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


class HubUnavailable(RuntimeError):
    """The hub's backing store cannot be reached right now."""


class StreamConflict(RuntimeError):
    """The session already has a stream open and may not have a second one."""


class StreamClosed(Exception):
    """The subscription ended; `reason` says why (shutdown, slow consumer, session closed)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Subscription(ABC):
    """A stream's view of its session: missed events first, then live ones."""

    session_id: str
    # None for the session's own stream; a request stream's key when a POST stream is resumed.
    stream: str | None = None
    # Set by the transport: closes the connection under a stream cut off for falling behind, because the
    # greenlet serving it is blocked writing to a client that does not read and would never see the end.
    on_cut_off: Callable[[], None] | None = None

    def cut_connection(self) -> None:
        """Close the stream's connection, if the transport said how."""
        if self.on_cut_off is not None:
            try:
                self.on_cut_off()
            except OSError:
                log.debug("connection of session %s already gone", self.session_id[:8])

    @abstractmethod
    def get(self, timeout: float) -> tuple[str, bytes] | None:
        """Return the next (event_id, json_bytes), None after timeout; raise StreamClosed when ended."""

    @abstractmethod
    def close(self, reason: str = "client gone") -> None:
        """Stop receiving and free what the subscription holds."""

    def __iter__(self) -> Iterator[tuple[str, bytes] | None]:
        """Iterate forever: events, or None when nothing arrived within a second."""
        while True:
            yield self.get(1.0)


class QueuedSubscription(Subscription):
    """A subscription fed through a Mailbox: the ending, reading and bounds both backends share."""

    queue: Mailbox
    reason: str | None = None
    maxsize: int
    max_bytes: int
    # Bytes of JSON waiting in the queue: bounded like the count, since one answer may be megabytes.
    queued_bytes: int = 0

    def enqueue(self, event: tuple[str, bytes]) -> None:
        """Queue an event, counting its bytes."""
        self.queue.put_nowait(event)
        self.queued_bytes += len(event[1])

    def is_full(self, data: bytes) -> bool:
        """Whether queueing data would pass the bounds; an empty queue takes one event of any size."""
        if self.queue.qsize() >= self.maxsize:
            return True
        return self.queued_bytes > 0 and self.queued_bytes + len(data) > self.max_bytes

    def end(self, reason: str) -> None:
        """Make reads raise StreamClosed with reason, once what is already queued has been read."""
        if self.reason is None:
            self.reason = reason
            self.queue.put_nowait(STREAM_END)

    def next_item(self, timeout: float) -> Any:
        """The next queued item, None after timeout; raise StreamClosed once the stream has ended."""
        try:
            item = self.queue.get(timeout)
        except Empty:
            return None
        if item is STREAM_END:
            # Put back, so that every later read ends too.
            self.queue.put_nowait(STREAM_END)
            raise StreamClosed(self.reason or "closed")
        self.queued_bytes -= len(item[1])
        return item


class InflightCalls:
    """The requests this worker is running, by (session id, request id), so they can be cancelled."""

    def __init__(self) -> None:
        self._calls: dict[tuple[str, Any], gevent.Greenlet] = {}

    def add(self, session_id: str, request_id: Any, greenlet: gevent.Greenlet) -> None:
        """Remember a running request."""
        self._calls[(session_id, request_id)] = greenlet

    def discard(self, session_id: str, request_id: Any, greenlet: gevent.Greenlet | None = None) -> None:
        """Forget a request that finished (only if it is still the same greenlet)."""
        key = (session_id, request_id)
        if greenlet is None or self._calls.get(key) is greenlet:
            self._calls.pop(key, None)

    def cancel(self, session_id: str, request_id: Any) -> bool:
        """Kill a running request; return whether one was running here."""
        greenlet = self._calls.pop((session_id, request_id), None)
        if greenlet is None or greenlet.dead:
            return False
        greenlet.kill(block=False)
        return True

    def running(self) -> list[tuple[str, Any, gevent.Greenlet]]:
        """Every request running here, as (session id, request id, greenlet)."""
        return [(session_id, request_id, greenlet) for (session_id, request_id), greenlet in self._calls.items()]

    def count(self, session_id: str) -> int:
        """How many requests of one session are running here."""
        return sum(1 for sid, _ in self._calls if sid == session_id)

    def __len__(self) -> int:
        return len(self._calls)


class PendingRequests:
    """Server-to-client requests waiting for the client's answer, in this worker."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, str], AsyncResult] = {}

    def open(self, session_id: str) -> tuple[str, AsyncResult]:
        """Reserve a fresh request id and the result its answer will fill."""
        request_id = "srv-" + secrets.token_hex(8)
        result = AsyncResult()
        self._waiting[(session_id, request_id)] = result
        return request_id, result

    def resolve(self, session_id: str, response: dict[str, Any]) -> bool:
        """Hand a client's answer to the waiting tool; False if nobody here waits for it."""
        result = self._waiting.pop((session_id, response.get("id")), None)
        if result is None:
            return False
        result.set(response)
        return True

    def forget(self, session_id: str, request_id: str) -> None:
        """Stop waiting for an answer."""
        self._waiting.pop((session_id, request_id), None)


class Hub(ABC):
    """Sessions, delivery, replay, server-to-client requests and cancellation."""

    # True when answers published after this worker exits still reach their clients (through another worker).
    outlives_worker = False

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.inflight = InflightCalls()
        self.pending = PendingRequests()

    # sessions
    @abstractmethod
    def create_session(self, session: Session, owner: str | None = None, owner_limit: int = 0) -> None:
        """Store a new session; raise CapacityError when full, QuotaFull when owner already holds owner_limit.

        The session lives pending_ttl_s until its first follow-up request (get_session) or stream.
        """

    @property
    def pending_ttl_s(self) -> float:
        """How long a session that never came back after initialize lives (never longer than the full TTL)."""
        return min(self.settings.pending_session_ttl_s, self.settings.session_ttl_s)

    @abstractmethod
    def get_session(self, session_id: str, accept: Callable[[Session], bool] | None = None) -> Session | None:
        """Load a session and refresh its idle timer; None if unknown or expired.

        With accept, a session it refuses (another principal's) is None and its timer is left alone.
        """

    def peek_session(self, session_id: str) -> Session | None:
        """Load a session without refreshing its idle timer (for bookkeeping, not for client requests)."""
        return self.get_session(session_id)

    @abstractmethod
    def save_session(self, session: Session) -> None:
        """Store a changed session."""

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

    @abstractmethod
    def give_back_call_slot(self, session_id: str, token: str) -> None:
        """Free a slot taken with take_call_slot."""

    # delivery
    @abstractmethod
    def publish(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Queue a message for a stream of the session (None: its own) and its replay log; return its event id."""

    def deliver(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Publish an answer the client was promised (a legacy 202), retrying through a store outage.

        Attempts go on, with backoff, for up to MCP_DELIVERY_RETRY_S; all carry one token, so an attempt that
        reached the store although its reply was lost is not appended again. Past the bound the answer is
        logged as lost: never dropped without a trace.
        """
        token = secrets.token_hex(8)
        started = time.monotonic()
        delay = DELIVERY_BACKOFF_MIN_S
        while True:
            try:
                event_id = self.publish_once(session_id, message, stream, token)
            except HubUnavailable:
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

    def publish_once(self, session_id: str, message: Any, stream: str | None, token: str) -> str | None:
        """Publish a message at most once per token (a store that can fail after storing overrides this)."""
        return self.publish(session_id, message, stream)

    @abstractmethod
    def subscribe(
        self, session_id: str, last_event_id: str | None = None, *, exclusive: bool = False
    ) -> Subscription:
        """Attach a stream; exclusive raises StreamConflict if one is attached, else it is replaced.

        A last_event_id from a request's stream resumes that stream (its later events only), not the session's.
        """

    @abstractmethod
    def broadcast_session_ids(self) -> list[str]:
        """The sessions a broadcast from this worker must reach: every live one, with a stream or not."""

    # control
    @abstractmethod
    def resolve(self, session_id: str, response: dict[str, Any]) -> bool:
        """Route a client's answer to the tool waiting for it, on whichever worker."""

    @abstractmethod
    def cancel(self, session_id: str, request_id: Any) -> None:
        """Cancel a running request on whichever worker runs it."""

    # run-time registry changes
    def share_registry(self, registry: Any) -> None:
        """Take this worker's run-time registry changes to every worker (one worker here: nothing to do)."""
        return None

    def prepare(self) -> None:
        """Get ready to serve, before a worker accepts its first connection (nothing to do here)."""
        return None

    # operations
    def ready(self) -> bool:
        """True when the hub's dependencies answer."""
        return True

    @abstractmethod
    def shutdown(self) -> None:
        """Close every stream promptly (on SIGTERM)."""

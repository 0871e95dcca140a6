"""What a store provides, as three narrow ports: its sessions (with their call slots), its event log, its fleet bus.

A new backend implements these three, and a task store (flask_mcp_gevent/tasks/store.py). What one worker holds
whatever the store (the calls it runs, the answers its tools wait for, its listen streams) is the server's, not the
store's: the fleet bus hands this worker what other workers send it through a `FleetWorker`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from flask_mcp_gevent.session import Session, SessionChange, SessionUpdate

if TYPE_CHECKING:
    from flask_mcp_gevent.subscription import Subscription

__all__ = ["EventLog", "FleetBus", "FleetWorker", "SessionStore"]


class SessionStore(ABC):
    """Sessions, each with an idle lifetime, and the call slots that bound a session's concurrent tool calls."""

    @abstractmethod
    def create_session(self, session: Session, owner: str | None = None, owner_limit: int = 0) -> None:
        """Store a new session for the pending TTL until it is used; CapacityError when full, QuotaFull at
        owner_limit."""

    @abstractmethod
    def get_session(self, session_id: str, accept: Callable[[Session], bool] | None = None) -> Session | None:
        """Load a session and refresh its idle timer; None if unknown, expired or refused by accept (timer left)."""

    def peek_session(self, session_id: str) -> Session | None:
        """Load a session without refreshing its idle timer (for bookkeeping, not for client requests)."""
        return self.get_session(session_id)

    def get_own_session(self, session_id: str, transport: str, principal: str | None) -> Session | None:
        """Load a session of this transport and principal; anyone else's is None, its idle timer left alone."""
        return self.get_session(
            session_id, accept=lambda stored: stored.transport == transport and stored.principal == principal)

    @abstractmethod
    def update_session(self, session_id: str, change: SessionChange) -> SessionUpdate:
        """Apply a change to the stored session in one atomic step, so concurrent changes never undo each other."""

    @abstractmethod
    def close_session(self, session_id: str) -> bool:
        """End a session and its streams; return whether it existed."""

    @abstractmethod
    def session_count(self) -> int:
        """How many sessions exist."""

    @abstractmethod
    def take_call_slot(self, session_id: str, limit: int) -> str | None:
        """Take one of a session's limit call slots; return its token, or None when all are taken."""

    # Free when this returns, so before the call's answer is written: a client that reads the answer and calls
    # again at once is not refused for a slot still counted.
    @abstractmethod
    def give_back_call_slot(self, session_id: str, token: str) -> None:
        """Free a slot taken with take_call_slot."""


class EventLog(ABC):
    """Each session's messages, kept in a bounded replay log and handed to the stream attached to them."""

    # True when answers published after this worker exits still reach their clients (through another worker).
    outlives_worker = False

    @abstractmethod
    def publish(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Queue a message for a stream of the session (None: its own) and its replay log; return its event id."""

    def deliver(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Store an answer the client was promised (a legacy 202, a request stream's response): publish it, here
        where a publish cannot fail; a store that can fail retries (MCP_DELIVERY_RETRY_S)."""
        return self.publish(session_id, message, stream)

    @abstractmethod
    def subscribe(self, session_id: str, last_event_id: str | None = None, *, exclusive: bool = False
                  ) -> Subscription:
        """Attach a stream after last_event_id on its stream, replacing an attached one (exclusive: StreamConflict)."""

    @abstractmethod
    def broadcast_session_ids(self) -> list[str]:
        """The sessions a broadcast must reach: every live one, with a stream or not."""

    @abstractmethod
    def shutdown(self) -> None:
        """End every stream attached here (on SIGTERM)."""


class FleetWorker(Protocol):
    """What a fleet bus hands this worker from the others: a client's answer, a cancellation, a notification."""

    def resolve_here(self, session_id: str, response: dict[str, Any]) -> bool:
        """Hand a client's answer to the tool waiting for it in this worker; whether one waited."""

    def cancel_here(self, session_id: str, request_id: Any) -> bool:
        """Stop a request running in this worker; whether one ran."""

    def hand_here(self, message: dict[str, Any]) -> None:
        """Hand a notification to this worker's listen streams."""


class FleetBus(ABC):
    """The other workers of the fleet: what this one tells them, and what every worker must agree on."""

    @abstractmethod
    def serve(self, worker: FleetWorker) -> None:
        """Hand what other workers send to this worker (set once, by the server)."""

    def resolve_elsewhere(self, session_id: str, response: dict[str, Any]) -> bool:
        """Route a client's answer to the worker whose tool waits for it; whether one may (alone: none does)."""
        return False

    def cancel_elsewhere(self, session_id: str, request_id: Any) -> None:
        """Ask the worker running a request to stop it (alone: there is no other)."""
        return None

    def tell_others(self, message: dict[str, Any]) -> None:
        """Hand a notification to every other worker's listen streams (alone: there are none)."""
        return None

    def share_registry(self, registry: Any) -> None:
        """Take this worker's run-time registry changes to every worker (alone: nothing to do)."""
        return None

    @abstractmethod
    def shared_secret(self, name: str) -> bytes:
        """A random secret for name, the same for every worker that shares this store."""

    @abstractmethod
    def use_once(self, rounds_id: bytes, ttl_s: float) -> bool:
        """Record an id as used for ttl_s seconds: True the first time, False while recorded; CapacityError if full."""

    @abstractmethod
    def is_used(self, rounds_id: bytes) -> bool:
        """Whether use_once recorded this id and it has not expired yet."""

    def prepare(self) -> None:
        """Get ready to serve, before a worker accepts its first connection (alone: nothing to do)."""
        return None

    def ready(self) -> bool:
        """True when the store's backing service answers."""
        return True

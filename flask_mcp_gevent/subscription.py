"""A stream's view of its session (Subscription), which both stores and the listen streams build on."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from flask_mcp_gevent.mailbox import Empty, Mailbox
from flask_mcp_gevent.metrics import instruments

__all__ = ["StreamClosed", "Subscription"]

log = logging.getLogger("mcp.store")

# Queued behind a stream's last event when it ends.
STREAM_END = object()


class StreamClosed(Exception):
    """The subscription ended; `reason` says why (shutdown, slow consumer, session closed)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Subscription(ABC):
    """A stream's view of its session, fed through a bounded Mailbox: missed events first, then live ones."""

    # Set by the transport: closes the connection under a stream cut off for falling behind, because the
    # greenlet serving it is blocked writing to a client that does not read and would never see the end.
    on_cut_off: Callable[[], None] | None = None
    # How a log line names the stream, given its session_id (cut short to 8 characters), and which logger writes it.
    log_name = "stream of session %.8s"
    logger = log

    def __init__(self, session_id: str, stream: str | None, maxsize: int, max_bytes: int) -> None:
        """Start with an empty queue that offer() keeps within maxsize events and max_bytes of JSON."""
        self.session_id = session_id
        # None for the session's own stream; a request stream's key when a POST stream is resumed.
        self.stream = stream
        # Unbounded underneath so the close sentinel always fits; offer() enforces maxsize and max_bytes.
        self.queue = Mailbox()
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        # Bytes of JSON waiting in the queue: bounded like the count, since one answer may be megabytes.
        self.queued_bytes = 0
        self.reason: str | None = None

    @abstractmethod
    def get(self, timeout: float) -> tuple[str, bytes] | None:
        """Return the next (event_id, json_bytes), None after timeout; raise StreamClosed when ended."""

    @abstractmethod
    def close(self, reason: str = "client gone") -> None:
        """Stop receiving and free what the subscription holds."""

    def cut_connection(self) -> None:
        """Close the stream's connection, if the transport said how."""
        if self.on_cut_off is not None:
            try:
                self.on_cut_off()
            except OSError:
                log.debug("connection of session %s already gone", self.session_id[:8])

    def enqueue(self, event: tuple[str, bytes]) -> None:
        """Queue an event, counting its bytes."""
        self.queue.put_nowait(event)
        self.queued_bytes += len(event[1])

    def offer(self, event_id: str, data: bytes) -> None:
        """Queue a live event; a consumer too slow to keep up is cut off instead of growing memory."""
        if self.reason is not None:
            return
        if self.is_full(data):
            self.cut_off()
            return
        self.enqueue((event_id, data))

    def idle(self) -> bool:
        """Whether nothing waits to be read: the next get() waits."""
        return self.queue.qsize() == 0

    def is_full(self, data: bytes) -> bool:
        """Whether queueing data would pass the bounds; an empty queue takes one event of any size."""
        if self.queue.qsize() >= self.maxsize:
            return True
        return self.queued_bytes > 0 and self.queued_bytes + len(data) > self.max_bytes

    def cut_off(self) -> None:
        """Close a stream whose client stopped reading, instead of growing memory: end it, close its connection."""
        self.logger.warning("closing " + self.log_name + ": queue full (slow consumer)", self.session_id)
        instruments().queue_dropped()
        self.end("slow consumer")
        self.cut_connection()

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

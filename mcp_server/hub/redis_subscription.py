"""One stream attached on this worker of the Redis hub: replayed events first, then live ones, bounded."""

from __future__ import annotations

import logging
import secrets
from typing import Protocol

from gevent.event import Event

from mcp_server.hub.base import join_event_id
from mcp_server.hub.mailbox import Empty, Mailbox
from mcp_server.hub.redis_codec import event_order
from mcp_server.hub.subscription import QueuedSubscription
from mcp_server.metrics import instruments

log = logging.getLogger("mcp.hub")


class StreamOwner(Protocol):
    """What a subscription needs of the hub that made it (RedisHub): whose worker it is, and how to let go."""

    @property
    def worker_id(self) -> str:
        """This worker's id in the fleet."""

    def forget(self, subscription: RedisSubscription, detach: bool) -> None:
        """Stop routing to a subscription and, once, give up its claim."""


class RedisSubscription(QueuedSubscription):
    """A stream on this worker: replayed events first, then live ones from the subscriber greenlet."""

    def __init__(self, hub: StreamOwner, session_id: str, stream: str | None, maxsize: int, max_bytes: int) -> None:
        self.hub = hub
        self.session_id = session_id
        self.stream = stream
        self.owner = hub.worker_id + "|" + secrets.token_hex(8)
        # Unbounded underneath so the close sentinel always fits; offer() enforces maxsize and max_bytes.
        self.queue: Mailbox = Mailbox()
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        self.reason: str | None = None
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
        """Queue a live event once; a consumer too slow to keep up is cut off instead of growing memory."""
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
        if order <= self.last_queued:
            return
        if self.is_full(data):
            self.cut_off()
            return
        self.last_queued = order
        self.enqueue((event_id, data))

    def hold(self) -> None:
        """Start holding live events back while missed ones are read from the replay log."""
        if self.held is None:
            self.held = []
            self.held_bytes = 0

    def fill(self, entries: list[tuple[str, bytes]], floor: str | None = None, bounded: bool = False) -> None:
        """Queue missed events after floor, then the held live ones.

        A new stream's replay bypasses the bound (the replay log is capped); a catch-up
        after a lost subscriber connection is live traffic and counts against it.
        """
        if floor is not None:
            self.last_queued = max(self.last_queued, event_order(floor))
        held, self.held, self.held_bytes = self.held or [], None, 0
        for event_id, data in entries:
            order = event_order(event_id)
            if bounded:
                self.offer(event_id, data)
            elif order > self.last_queued and self.reason is None:
                self.last_queued = order
                self.enqueue((event_id, data))
        for event_id, data in held:
            self.offer(event_id, data)
        self.loaded.set()

    def cut_off(self) -> None:
        """Close a stream whose client stopped reading, and drop what it queued."""
        log.warning("closing stream of session %s: queue full (slow consumer)", self.session_id[:8])
        instruments().queue_dropped()
        while True:
            try:
                self.queue.get_nowait()
            except Empty:
                break
        self.queued_bytes = 0
        self.held = None
        self.end("slow consumer")
        self.hub.forget(self, detach=True)
        self.cut_connection()

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
        self.hub.forget(self, detach=True)

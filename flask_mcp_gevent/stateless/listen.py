"""subscriptions/listen (MCP 2026-07-28): this worker's open listen streams, their filters and their tags.

A listen request opens a `ListenStream` here. The server hands every list change and resource update
made anywhere in the fleet to `ListenRegistry.deliver` on every worker, once; each stream keeps only what
its filter asked for, tagged with the listen request's id. The handler `subscriptions_listen` runs for the
stream's whole life and sends each message with the request's own `ctx.send` (an SSE event on HTTP, a line
on stdio); closing the stream (HTTP) or notifications/cancelled (stdio) kills it, and its `finally` lets go.
A stream keeps its request while it is open, so the request is bounded in bytes (listen_filter.py); what waits
for a client that does not read is bounded where it waits, in the transport (MCP_QUEUE_MAX, MCP_QUEUE_MAX_BYTES).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from jsonrpcserver import Success

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.errors import SERVER_UNAVAILABLE, RpcError
from flask_mcp_gevent.protocol.resources import may_subscribe
from flask_mcp_gevent.stateless.listen_filter import (
    FLAGS,
    RESOURCE_SUBSCRIPTIONS,
    TASK_IDS,
    ListenLimits,
    check_request_bytes,
    honoured_filter,
)
from flask_mcp_gevent.stateless.metadata import SUBSCRIPTION_ID
from flask_mcp_gevent.subscription import StreamClosed, Subscription
from flask_mcp_gevent.tasks.record import TERMINAL
from flask_mcp_gevent.tasks.shapes import NOTIFICATION as TASK_NOTIFICATION
from flask_mcp_gevent.tasks.shapes import declares_tasks

__all__ = [
    "ACKNOWLEDGED",
    "LISTEN",
    "SHUTTING_DOWN",
    "ListenLimits",
    "ListenRegistry",
    "ListenStream",
    "honoured_filter",
    "listen_messages",
    "listen_result",
    "subscriptions_listen",
]

log = logging.getLogger("mcp.listen")

LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
RESOURCE_UPDATED = "notifications/resources/updated"
# The reason a stream ends with when the server stops: the one ending that gets a final result.
SHUTTING_DOWN = "server shutting down"


def tagged(message: dict[str, Any], listen_id: Any) -> dict[str, Any]:
    """Return a copy of a notification with the subscription's id in params._meta."""
    params = dict(message.get("params") or {})
    found = params.get("_meta")
    params["_meta"] = {**(found if isinstance(found, dict) else {}), SUBSCRIPTION_ID: listen_id}
    return {"jsonrpc": "2.0", "method": message["method"], "params": params}


def listen_result(listen_id: Any) -> dict[str, Any]:
    """The SubscriptionsListenResult that ends a subscription the server closes."""
    return {"jsonrpc": "2.0", "id": listen_id,
            "result": {"resultType": "complete", "_meta": {SUBSCRIPTION_ID: listen_id}}}


class ListenStream(Subscription):
    """One open subscriptions/listen: its id, owner and filter, and a bounded queue of tagged notifications."""

    # Its session_id is a log name already: "listen" and its listen id, escaped and cut short; logged as mcp.listen.
    log_name = "%s"
    logger = log

    def __init__(self, listen_id: Any, principal: str | None, honoured: dict[str, Any], maxsize: int,
                 max_bytes: int, registry: ListenRegistry | None = None) -> None:
        # Logs name a stream by its listen id, escaped and cut short (Subscription's logs use session_id).
        super().__init__("listen " + repr(listen_id)[:40], None, maxsize, max_bytes)
        self.listen_id = listen_id
        self.principal = principal
        self.honoured = honoured
        self.methods = frozenset(FLAGS[flag] for flag in FLAGS if honoured.get(flag))
        self.resources = frozenset(honoured.get(RESOURCE_SUBSCRIPTIONS, ()))
        self.task_ids = frozenset(honoured.get(TASK_IDS, ()))
        # Tasks of task_ids seen ending: no longer worth a look at keepalive time (see subscriptions_listen).
        self.ended_tasks: set[str] = set()
        self.registry = registry

    def wants(self, message: dict[str, Any]) -> bool:
        """Whether the filter asked for this notification."""
        method = message.get("method")
        if method == RESOURCE_UPDATED:
            return (message.get("params") or {}).get("uri") in self.resources
        if method == TASK_NOTIFICATION:
            params = message.get("params") or {}
            if params.get("taskId") not in self.task_ids or message.get("principal") != self.principal:
                return False
            if params.get("status") in TERMINAL:
                self.ended_tasks.add(params["taskId"])
            return True
        return method in self.methods

    def keep_tasks(self, alive: set[str]) -> None:
        """Narrow taskIds to these tasks: the acknowledgment names only them, and only they are read again."""
        self.honoured[TASK_IDS] = [task_id for task_id in self.honoured.get(TASK_IDS, ()) if task_id in alive]
        self.task_ids = frozenset(self.honoured[TASK_IDS])

    def acknowledgment(self) -> dict[str, Any]:
        """The first message of the stream: the subscription's id and the filter it honours."""
        return {"jsonrpc": "2.0", "method": ACKNOWLEDGED,
                "params": {"_meta": {SUBSCRIPTION_ID: self.listen_id}, "notifications": self.honoured}}

    def deliver(self, message: dict[str, Any]) -> None:
        """Queue a notification the filter wants, tagged; a stream that does not read is cut off."""
        if self.reason is None and self.wants(message):
            self.offer("", dumps(tagged(message, self.listen_id)))

    def get(self, timeout: float) -> tuple[str, bytes] | None:
        """The next (empty event id, tagged JSON), None after timeout; raise StreamClosed once ended."""
        return self.next_item(timeout)

    def close(self, reason: str = "client gone") -> None:
        """Stop receiving: leave the registry (a cancelled or finished stream)."""
        if self.reason is None:
            self.reason = reason
        if self.registry is not None:
            self.registry.forget(self)


class ListenRegistry:
    """This worker's open listen streams, bounded per principal; fed by the store's broadcast handler."""

    def __init__(self, queue_max: int, queue_max_bytes: int, per_principal: int,
                 limits: ListenLimits | None = None) -> None:
        self.queue_max = queue_max
        self.queue_max_bytes = queue_max_bytes
        self.per_principal = per_principal
        self.limits = ListenLimits.from_settings() if limits is None else limits
        self.streams: dict[int, ListenStream] = {}
        self.counts: dict[str | None, int] = {}
        self.stopping = False

    def open(self, listen_id: Any, principal: str | None, requested: object,
             may_read: Callable[[str], bool], tasks: bool = False) -> ListenStream:
        """Open a listen stream; RpcError -32602 for a bad filter, -32004 past the limit or when stopping."""
        honoured = honoured_filter(requested, may_read, tasks, self.limits)
        if self.stopping:
            raise RpcError(SERVER_UNAVAILABLE, "Server shutting down: send subscriptions/listen again to another "
                           "server")
        if self.counts.get(principal, 0) >= self.per_principal:
            raise RpcError(SERVER_UNAVAILABLE, f"Too many subscriptions/listen streams open for this principal on "
                           f"this worker: the limit is {self.per_principal} (MCP_MAX_LISTENS_PER_PRINCIPAL); "
                           "close one first")
        stream = ListenStream(listen_id, principal, honoured, self.queue_max, self.queue_max_bytes, self)
        self.streams[id(stream)] = stream
        self.counts[principal] = self.counts.get(principal, 0) + 1
        return stream

    def forget(self, stream: ListenStream) -> None:
        """Remove a stream (idempotent)."""
        if self.streams.pop(id(stream), None) is None:
            return
        left = self.counts.get(stream.principal, 1) - 1
        if left > 0:
            self.counts[stream.principal] = left
        else:
            self.counts.pop(stream.principal, None)

    def deliver(self, message: dict[str, Any]) -> None:
        """Hand a notification to every open stream here whose filter wants it (never blocks)."""
        for stream in list(self.streams.values()):
            stream.deliver(message)

    def shutdown(self) -> None:
        """End every stream gracefully: each sends its final result, then closes."""
        self.stopping = True
        for stream in list(self.streams.values()):
            stream.end(SHUTTING_DOWN)

    def __len__(self) -> int:
        """How many listen streams are open here."""
        return len(self.streams)


def listen_messages(stream: ListenStream, keepalive_s: float) -> Iterator[dict[str, Any] | None]:
    """Yield the stream's messages: the acknowledgment, then tagged notifications, None when idle keepalive_s.

    On a graceful end (the server stopping) the last message is the SubscriptionsListenResult; any other end
    (slow consumer) just stops. The caller closes the stream (a finally around its loop).
    """
    yield stream.acknowledgment()
    while True:
        try:
            item = stream.get(keepalive_s)
        except StreamClosed as closed:
            log.info("%s closed: %s", stream.session_id, closed.reason)
            if closed.reason == SHUTTING_DOWN:
                yield listen_result(stream.listen_id)
            return
        yield None if item is None else loads(item[1])


def keep_known_tasks(ctx: Any, stream: ListenStream) -> None:
    """Look each of the stream's task ids up, this once: keep those naming a task of its principal not yet ended.

    The rest never fire (unknown, expired, another principal's) or have nothing more to say (ended: the client
    reads them with tasks/get), so they are left out of the acknowledgment and never read again. The stream is
    already registered, so a task ending meanwhile is still heard. StoreUnavailable is the caller's (-32004).
    """
    if not stream.task_ids:
        return
    runner = getattr(ctx.services, "tasks", None)
    live = runner.look_at(stream.principal, list(stream.honoured[TASK_IDS])) if runner is not None else set()
    stream.keep_tasks(live)


def look_at_tasks(ctx: Any, stream: ListenStream) -> None:
    """Read the stream's tasks not seen ending: one whose worker died fails on that read, and is announced then."""
    runner = getattr(ctx.services, "tasks", None)
    waiting = stream.task_ids - stream.ended_tasks
    if runner is None or not waiting:
        return
    try:
        live = runner.look_at(stream.principal, sorted(waiting))
    except StoreUnavailable:
        log.info("could not look at the tasks of %s: Redis unreachable", stream.session_id)
        return
    # Gone (its TTL ran out) or ended: nothing more will come of it, so it is not read again.
    stream.ended_tasks.update(waiting - live)


def subscriptions_listen(ctx: Any, notifications: object = None, **_: Any) -> Any:
    """Serve one subscriptions/listen until the client goes or the server stops; return the closing result.

    Keepalives go out through ctx.send.keepalive when the transport has one (an SSE comment on HTTP). A
    transport that bounds what waits for its client says, with ctx.send.reason, that it cut the client off.
    """
    registry: ListenRegistry = ctx.services.listeners
    check_request_bytes(ctx.params, registry.limits)
    stream = registry.open(ctx.request_id, ctx.principal, notifications,
                           lambda uri: may_subscribe(ctx, uri), declares_tasks(ctx.session.client_capabilities))
    # A stream whose own queue fills up (logged and counted there) also drops what the transport holds for it,
    # and its connection.
    drop = getattr(ctx.send, "drop", None)
    stream.on_cut_off = None if drop is None else (lambda: drop("slow consumer"))
    keepalive = getattr(ctx.send, "keepalive", None)
    try:
        keep_known_tasks(ctx, stream)
        for message in listen_messages(stream, ctx.settings.keepalive_s):
            if message is None:
                if keepalive is not None:
                    keepalive()
                look_at_tasks(ctx, stream)
            elif "id" in message:
                return Success(message["result"])
            else:
                ctx.send(message)
                cut_off = getattr(ctx.send, "reason", None)
                if cut_off is not None:
                    stream.end(cut_off)
                    break
        raise RpcError(SERVER_UNAVAILABLE, f"Listen stream closed: {stream.reason}; send subscriptions/listen again")
    finally:
        stream.close()

"""Server-Sent Events over HTTP, shared by both HTTP transports: the session stream, a request's own stream, headers."""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import gevent
from flask import Response
from gevent.queue import Empty, Queue

from flask_mcp_gevent.encoding import KEEPALIVE_FRAME, dumps, format_sse_event, loads
from flask_mcp_gevent.metrics import instruments
from flask_mcp_gevent.subscription import StreamClosed, Subscription
from flask_mcp_gevent.without_gevent import SERVED

__all__ = ["DONE", "EVENT_STREAM", "EVENT_STREAM_CONTENT_TYPE", "SSE_HEADERS", "Replay", "RequestStream",
           "SocketShutdown", "connection_closer", "is_response", "priming_frame", "stream_events"]

log = logging.getLogger("mcp.sse")
EVENT_STREAM = "text/event-stream"
# One string every stream's Content-Type shares: from a mimetype werkzeug builds one per response, which gunicorn
# then holds for the stream's whole life.
EVENT_STREAM_CONTENT_TYPE = f"{EVENT_STREAM}; charset=utf-8"
SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "Connection": "keep-alive",
}


class SocketShutdown:
    """Shuts a client's socket down when called: what a stream keeps, for its whole life, to cut its client off.

    An object of one slot (48 bytes), where a closure over the socket costs 0.2 KiB per stream.
    """

    __slots__ = ("sock",)

    def __init__(self, sock: Any) -> None:
        self.sock = sock  # the socket, or what the server wraps it in (serving/gunicorn_worker.HeadersWithBody)

    def __call__(self) -> None:
        """Shut the socket down both ways: a write blocked on it fails, and the client sees the end."""
        self.sock.shutdown(socket.SHUT_RDWR)


def connection_closer(environ: Mapping[str, Any]) -> Callable[[], None] | None:
    """What shuts the client's socket down (under gunicorn, which puts the socket in the environ), or None."""
    sock = environ.get("gunicorn.socket")
    return None if sock is None else SocketShutdown(sock)


def priming_frame(event_id: str, retry_ms: int) -> bytes:
    """An event with an id, a retry and no data, so the client can resume before any message (SEP-1699)."""
    return format_sse_event(b"", event=None, event_id=event_id, retry_ms=retry_ms)


def stream_events(subscription: Subscription, keepalive_s: float, opening: bytes = b"", kind: str = "legacy"
                  ) -> Iterator[bytes]:
    """Yield SSE frames from a subscription until it closes, opening first if given; always release it at the end.

    While it waits, a stream holds its subscription and none of the frames it sent, nor does the server: an idle
    stream may wait for hours, and thousands of them may wait at once.
    """
    metrics = instruments()
    metrics.stream_opened(kind)
    try:
        if opening:
            yield opening
            del opening
        while True:
            try:
                item = subscription.get(keepalive_s)
            except StreamClosed as closed:
                log.info("stream of session %s closed: %s", subscription.session_id[:8], closed.reason)
                return
            if item is None:
                yield KEEPALIVE_FRAME
            else:
                yield format_sse_event(item[1], event_id=item[0])
                # A resumed request stream is over once it has carried the request's response.
                if subscription.stream is not None and is_response(item[1]):
                    return
                if subscription.idle():
                    # The server holds the chunk it wrote last until it gets the next one; an empty chunk, which
                    # it writes as nothing, lets that frame go before the stream waits.
                    yield b""
    finally:
        # A disconnect surfaces here as GeneratorExit at the next write.
        subscription.close()
        metrics.stream_closed(kind)


def is_response(data: bytes) -> bool:
    """True when an encoded message is a JSON-RPC response (it has no method)."""
    message = loads(data)
    return isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message)


# Outbox markers: the request finished (its response is the greenlet's value); ctx.close_stream() was called.
DONE = object()
CLOSE = object()


class Replay(Protocol):
    """Where a resumable request stream keeps what it sends (Streamable HTTP: the session's replay log)."""

    def keep(self, message: dict[str, Any]) -> str | None:
        """Keep a message the request sends; its event id."""

    def keep_response(self, response: dict[str, Any]) -> str | None:
        """Keep the request's response (retried through a store outage); its event id."""


class RequestStream:
    """One request's way back: what it sends before its result, queued for its own SSE stream, then its response.

    With a replay (Streamable HTTP) every message and the response are kept there too, so a client that loses the
    stream, or that ctx.close_stream() cut off, resumes it with Last-Event-ID; the request runs on when the stream
    ends. Without one (2026-07-28) nothing is kept, and the end of the stream cancels the request. With bounds
    (MCP_QUEUE_MAX, MCP_QUEUE_MAX_BYTES) a client that does not read is cut off, its queue dropped and its
    connection closed.
    """

    def __init__(self, name: str, max_count: int = sys.maxsize, max_bytes: int = sys.maxsize,
                 close_connection: Callable[[], None] | None = None, replay: Replay | None = None) -> None:
        self.name = name
        self.outbox: Queue = Queue()
        self.ended = False
        self.over = False
        self.max_count = max_count
        self.max_bytes = max_bytes
        # Bytes of JSON waiting in the outbox: a listen stream's notifications wait here for a client that reads.
        self.queued_bytes = 0
        # Why the stream was cut off (None while it is not): subscriptions/listen ends itself with it.
        self.reason: str | None = None
        self.close_connection = close_connection
        self.replay = replay
        self.response_kept = False

    def __call__(self, message: dict[str, Any]) -> None:
        """Send a message that belongs to this request (the `send` handed to the server)."""
        event_id = self.replay.keep(message) if self.replay is not None else None
        if self.ended:
            return
        data = dumps(message)
        waiting = self.outbox.qsize()
        # An empty queue takes one message of any size, as the 2025 streams' queues do.
        if waiting >= self.max_count or (waiting and self.queued_bytes + len(data) > self.max_bytes):
            self.cut_off()
            return
        self.queued_bytes += len(data)
        self.outbox.put((event_id, data))

    def close_stream(self) -> None:
        """End the SSE stream now, when a replay keeps the rest for the client to resume (else a no-op)."""
        if self.replay is not None:
            self.outbox.put(CLOSE)

    def first_item(self, greenlet: gevent.Greenlet) -> Any:
        """Wait for what comes first: a message to stream, or DONE when the request finished without one."""
        # A raw link runs in the store without spawning a greenlet; putting on an unbounded queue never blocks.
        greenlet.rawlink(lambda g: self.outbox.put_nowait(DONE))
        return self.take(self.outbox.get())

    def take(self, item: Any) -> Any:
        """Account for an item leaving the outbox to be written; return it."""
        if isinstance(item, tuple):
            self.queued_bytes -= len(item[1])
        return item

    def keep_response(self, response: Any) -> str | None:
        """Keep the response in the replay once, so a resumed stream gets it; its event id."""
        if self.replay is None or self.response_kept or not isinstance(response, dict):
            return None
        self.response_kept = True
        return self.replay.keep_response(response)

    def cut_off(self, reason: str = "slow consumer") -> None:
        """Stop a client that does not read (logged and counted once), then drop its stream."""
        if self.reason is None:
            log.warning("closing the stream of %s: queue full (%s)", self.name, reason)
            instruments().queue_dropped()
            self.drop(reason)

    def drop(self, reason: str) -> None:
        """Drop what waits for the client and close its connection (once), saying nothing: the caller has."""
        if self.reason is not None:
            return
        self.reason = reason
        self.ended = True
        finished = False
        while True:
            try:
                finished = self.outbox.get_nowait() is DONE or finished
            except Empty:
                break
        self.queued_bytes = 0
        if finished:
            self.outbox.put_nowait(DONE)  # the writer still ends when it gets that far
        if self.close_connection is not None:
            try:
                self.close_connection()  # the writer is blocked on a client that does not read: fail its write
            except OSError:
                log.debug("connection of %s already gone", self.name)

    def events(self, first: Any, greenlet: gevent.Greenlet, keepalive_s: float | None,
               first_frames: tuple[bytes, ...]) -> Iterator[bytes]:
        """Yield the request's messages (keepalives while it is quiet, if keepalive_s), then its response."""
        metrics = instruments()
        metrics.stream_opened("request")
        try:
            yield from first_frames
            item = first
            while item is not DONE and item is not CLOSE:
                yield KEEPALIVE_FRAME if item is None else format_sse_event(item[1], event_id=item[0])
                try:
                    item = self.take(self.outbox.get(timeout=keepalive_s))
                except Empty:
                    item = None  # a write now tells a closed connection from a slow tool
            if item is DONE and isinstance(greenlet.value, dict):
                event_id = self.keep_response(greenlet.value)
                yield format_sse_event(dumps(greenlet.value), event_id=event_id)
        finally:
            metrics.stream_closed("request")
            self.end(greenlet)

    def response(self, first: Any, greenlet: gevent.Greenlet, keepalive_s: float | None,
                 headers: Mapping[str, str] | None = None, first_frames: tuple[bytes, ...] = ()) -> Response:
        """The SSE response that streams the request from its first item on."""
        response = Response(self.events(first, greenlet, keepalive_s, first_frames),
                            content_type=EVENT_STREAM_CONTENT_TYPE, headers={**SSE_HEADERS, **(headers or {})},
                            direct_passthrough=True)
        # Also when the client left before the first byte, so the generator never ran.
        response.call_on_close(lambda: self.end(greenlet))
        return response

    def end(self, greenlet: gevent.Greenlet) -> None:
        """The stream is over: without a replay the request still running is cancelled; with one it finishes there."""
        self.ended = True
        if self.over:
            return
        self.over = True
        # On a server that is not gevent's nothing runs the thread's hub once its request is over: wait here.
        wait = SERVED.without_gevent is not None
        if self.replay is None:
            if not greenlet.dead:
                greenlet.kill(block=wait)
        elif not self.response_kept:
            greenlet.link_value(lambda g: self.keep_response(g.value))
            if wait:
                greenlet.join()

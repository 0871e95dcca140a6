"""Server-Sent Events over HTTP, shared by both HTTP transports: the frame generator and its headers."""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from mcp_server.encoding import KEEPALIVE_FRAME, format_sse_event, loads
from mcp_server.hub import StreamClosed, Subscription
from mcp_server.metrics import instruments

__all__ = ["EVENT_STREAM", "SSE_HEADERS", "connection_closer", "is_response", "priming_frame", "stream_events"]

log = logging.getLogger("mcp.sse")
EVENT_STREAM = "text/event-stream"
SSE_HEADERS = {
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
    "Connection": "keep-alive",
}


def connection_closer(environ: Mapping[str, Any]) -> Callable[[], None] | None:
    """A function that shuts the client's socket down (under gunicorn, which puts the socket in the environ)."""
    sock = environ.get("gunicorn.socket")
    if sock is None:
        return None
    return lambda: sock.shutdown(socket.SHUT_RDWR)


def priming_frame(event_id: str, retry_ms: int) -> bytes:
    """An event with an id, a retry and no data, so the client can resume before any message (SEP-1699)."""
    return format_sse_event(b"", event=None, event_id=event_id, retry_ms=retry_ms)


def stream_events(
    subscription: Subscription, keepalive_s: float, first_frames: tuple[bytes, ...] = (), kind: str = "legacy"
) -> Iterator[bytes]:
    """Yield SSE frames from a subscription until it closes; always release it at the end."""
    metrics = instruments()
    metrics.stream_opened(kind)
    try:
        yield from first_frames
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
    finally:
        # A disconnect surfaces here as GeneratorExit at the next write.
        subscription.close()
        metrics.stream_closed(kind)


def is_response(data: bytes) -> bool:
    """True when an encoded message is a JSON-RPC response (it has no method)."""
    message = loads(data)
    return isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message)

"""Legacy HTTP+SSE transport (protocol 2024-11-05): a GET stream plus POSTed messages.

GET opens the session and streams `event: endpoint` first, then one `event:
message` per JSON-RPC message, each with an `id:`. POST answers 202 at once; the
answers go out through the hub to whichever worker holds the stream. A client
that reconnects with `?session_id=` and `Last-Event-ID` gets what it missed (an
extension: 2024-11-05 itself has no resumption).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import gevent
from flask import Response, request

from mcp_server.dispatcher import Dispatcher
from mcp_server.encoding import KEEPALIVE_FRAME, format_sse_event, loads
from mcp_server.hub import StreamClosed, Subscription
from mcp_server.messages import Body
from mcp_server.metrics import instruments
from mcp_server.session import SSE, Session
from mcp_server.transports.http_responses import empty_response

__all__ = ["SSE_HEADERS", "open_stream", "post_message", "stream_events"]

log = logging.getLogger("mcp.sse")
HTTP_202_ACCEPTED = 202
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


def open_stream(core: Dispatcher, endpoint_path: str, resume: Session | None, last_event_id: str | None,
                principal: str | None) -> Response:
    """Open (or resume) a legacy session and return its event stream."""
    if resume is None:
        session = core.open_session(SSE, principal, request.environ.get("REMOTE_ADDR"))
        log.info("opened legacy session %s", session.id[:8])
    else:
        session = resume
    subscription = core.hub.subscribe(session.id, last_event_id)
    subscription.on_cut_off = connection_closer(request.environ)
    endpoint = format_sse_event(f"{endpoint_path}?session_id={session.id}", event="endpoint")
    return Response(
        stream_events(subscription, core.settings.keepalive_s, (endpoint,)),
        mimetype="text/event-stream",
        headers=SSE_HEADERS,
        # The generator yields bytes: hand it to the server as is, without werkzeug's two wrapping
        # iterators (less work per event, and a shallower stack for every idle stream to keep).
        direct_passthrough=True,
    )


def post_message(core: Dispatcher, session: Session, body: Body) -> Response:
    """Accept a POSTed body; every answer is published to the session's stream."""

    def publish(message: Any) -> None:
        core.hub.publish(session.id, message)

    def deliver(answer: Any) -> None:
        # The 202 promised this answer: it is retried through a store outage (MCP_DELIVERY_RETRY_S).
        core.hub.deliver(session.id, answer)

    rejected = core.batch_error(session, body)
    if rejected is not None:
        # Stored before the 202, so an outage gets the POST a 503 instead of an acknowledgement.
        publish(rejected)
        return empty_response(HTTP_202_ACCEPTED)
    if body.is_batch:
        running, errors = core.accept(session, body, publish)
        if running or errors:
            gevent.spawn(publish_batch, core, session, running, errors)
    else:
        # Each request delivers its own response from its greenlet as it finishes.
        _, errors = core.accept(session, body, publish, on_done=deliver)
        for error in errors:
            publish(error)
    return empty_response(HTTP_202_ACCEPTED)


def publish_batch(core: Dispatcher, session: Session, running: list, errors: list) -> None:
    """Deliver a batch's answers together, as one JSON array, once they are all done."""
    gevent.joinall(running)
    answers = errors + [g.value for g in running if isinstance(g.value, dict)]
    if answers:
        core.hub.deliver(session.id, answers)

"""Legacy HTTP+SSE transport (protocol 2024-11-05): a GET stream plus POSTed messages.

GET opens the session and streams `event: endpoint` first, then one `event:
message` per JSON-RPC message, each with an `id:`. POST answers 202 at once; the
answers go out through the store to whichever worker holds the stream. A client
that reconnects with `?session_id=` and `Last-Event-ID` gets what it missed (an
extension: 2024-11-05 itself has no resumption).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import gevent
from flask import Response

from flask_mcp_gevent.auth.principal import Principal, name_of
from flask_mcp_gevent.conditions import CapacityError
from flask_mcp_gevent.encoding import format_sse_event
from flask_mcp_gevent.errors import INVALID_REQUEST
from flask_mcp_gevent.messages import Body
from flask_mcp_gevent.server import Server, answers_of
from flask_mcp_gevent.session import SSE, Session, session_id_from
from flask_mcp_gevent.stream_handoff import stream_body
from flask_mcp_gevent.transports.event_stream import (
    EVENT_STREAM_CONTENT_TYPE,
    SSE_HEADERS,
    connection_closer,
    stream_events,
)
from flask_mcp_gevent.transports.http_io import HttpProblem, empty_response, lookup_session, server_busy

__all__ = ["legacy_get", "legacy_post", "open_stream", "post_message"]

log = logging.getLogger("mcp.sse")


def legacy_get(server: Server, environ: Mapping[str, Any], caller: Principal | None, endpoint: str
               ) -> Response:
    """Open a new legacy stream, or resume one named by ?session_id=; its messages go to endpoint."""
    session_id = session_id_from(environ, header=False)
    resume = lookup_session(server, session_id, SSE, name_of(caller)) if session_id is not None else None
    try:
        return open_stream(server, environ, environ.get("SCRIPT_NAME", "").rstrip("/") + endpoint, resume,
                           name_of(caller))
    except CapacityError as full:
        raise server_busy(full) from None


def legacy_post(server: Server, session_id: str | None, caller: Principal | None, body: Body) -> Response:
    """Accept a legacy message for the session its ?session_id= names; the answer goes to the session's stream."""
    if session_id is None:
        raise HttpProblem(HTTPStatus.BAD_REQUEST, INVALID_REQUEST,
                          "Missing session id: POST to the endpoint URL the stream sent (…?session_id=<id>)",
                          request_id=body.request_id)
    session = lookup_session(server, session_id, SSE, name_of(caller), body.request_id)
    return post_message(server, session, body, caller)


def open_stream(server: Server, environ: Mapping[str, Any], endpoint_path: str, resume: Session | None,
                principal: str | None) -> Response:
    """Open (or resume) a legacy session and return its event stream."""
    if resume is None:
        session = server.open_session(SSE, principal, environ.get("REMOTE_ADDR"))
        # Logged from the store, on its own stack, before the loop runs anything else: where the stream stays in its
        # request's greenlet (under gunicorn's own TLS, or another server), logging's dozen frames on top of the
        # request's would be the deepest call of the stream's life and keep a second 4 KiB page of that greenlet's
        # frame stack resident until the stream ends (bench/RESULTS.md, idle legacy SSE session).
        gevent.get_hub().loop.run_callback(log.info, "opened legacy session %s", session.id[:8])
    else:
        session = resume
    subscription = server.subscribe(session.id, environ.get("HTTP_LAST_EVENT_ID"))
    subscription.on_cut_off = connection_closer(environ)
    endpoint = format_sse_event(f"{endpoint_path}?session_id={session.id}", event="endpoint")
    return Response(
        stream_body(environ, stream_events(subscription, server.settings.keepalive_s, endpoint)),
        content_type=EVENT_STREAM_CONTENT_TYPE,
        headers=SSE_HEADERS,
        # The generator yields bytes: hand it to the server as is, without werkzeug's two wrapping
        # iterators (less work per event, and a shallower stack for every idle stream to keep).
        direct_passthrough=True,
    )


def post_message(server: Server, session: Session, body: Body, caller: Principal | None) -> Response:
    """Accept a POSTed body from caller; every answer is published to the session's stream."""

    def publish(message: Any) -> None:
        server.publish(session.id, message)

    def deliver(answer: Any) -> None:
        # The 202 promised this answer: the call's greenlet stores it, retrying through a store outage
        # (MCP_DELIVERY_RETRY_S); the drain waits for it (Server.deliver).
        server.deliver(session.id, answer)

    rejected = server.batch_error(session, body)
    if rejected is not None:
        # Stored before the 202, so an outage gets the POST a 503 instead of an acknowledgement.
        publish(rejected)
        return empty_response(HTTPStatus.ACCEPTED)
    if body.is_batch:
        running, errors = server.accept(session, body, publish, caller=caller)
        if running or errors:
            gevent.spawn(publish_batch, server, session, running, errors)
    else:
        # Each request delivers its own response from its greenlet as it finishes.
        _, errors = server.accept(session, body, publish, on_done=deliver, caller=caller)
        for error in errors:
            publish(error)
    return empty_response(HTTPStatus.ACCEPTED)


def publish_batch(server: Server, session: Session, running: list, errors: list) -> None:
    """Deliver a batch's answers together, as one JSON array, once they are all done."""
    answers = answers_of(running, errors)
    if answers:
        server.deliver(session.id, answers)

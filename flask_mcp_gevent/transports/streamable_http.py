"""Streamable HTTP transport (2025-03-26 .. 2025-11-25) on the same `/mcp` path.

POST carries messages. `initialize` opens a session (`Mcp-Session-Id`). A request
is answered as JSON when it produces only its result, or as a short SSE stream
when it sends progress, logs or server requests first. GET opens the session's
one standalone stream; DELETE ends the session.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from functools import cached_property
from http import HTTPStatus
from typing import Any

from flask import Response

from flask_mcp_gevent.auth.principal import Principal, name_of
from flask_mcp_gevent.conditions import CapacityError, StoreUnavailable, StreamConflict
from flask_mcp_gevent.encoding import KEEPALIVE_FRAME
from flask_mcp_gevent.errors import (
    INVALID_REQUEST,
    SERVER_UNAVAILABLE,
    STORE_RETRY_AFTER_S,
    STORE_UNAVAILABLE_MESSAGE,
)
from flask_mcp_gevent.event_ids import join_event_id
from flask_mcp_gevent.messages import REQUEST, Body, Message
from flask_mcp_gevent.server import Server, answers_of
from flask_mcp_gevent.session import SESSION_HEADER, STREAMABLE, SUPPORTED, Session, at_least, session_id_from
from flask_mcp_gevent.stateless.metadata import PROTOCOL_VERSION_KEY
from flask_mcp_gevent.stream_handoff import stream_body
from flask_mcp_gevent.transports.event_stream import (
    DONE,
    EVENT_STREAM_CONTENT_TYPE,
    SSE_HEADERS,
    RequestStream,
    connection_closer,
    priming_frame,
    stream_events,
)
from flask_mcp_gevent.transports.http_io import (
    AcceptedTypes,
    HttpProblem,
    empty_response,
    json_response,
    lookup_session,
    server_busy,
    store_unavailable,
)

__all__ = ["SessionReplay", "check_protocol_header", "close_session", "open_stream", "post_messages",
           "streamable_delete", "streamable_get", "streamable_post"]

log = logging.getLogger("mcp.streamable")

# Priming events (SEP-1699) are new in 2025-11-25; older clients may not expect an event without data.
PRIMING_SINCE = "2025-11-25"
# How long a client should wait before resuming a stream the server closed (the SSE retry field).
RETRY_MS = 1000


def check_protocol_header(value: str | None, request_id: Any = None) -> None:
    """Reject an MCP-Protocol-Version this server does not speak (400); an absent one means 2025-03-26."""
    # Any supported version is accepted, not only the negotiated one: clients (the conformance suite
    # among them) send 2025-03-26 on sessions that negotiated later versions.
    if value is None or value in SUPPORTED:
        return
    raise HttpProblem(
        HTTPStatus.BAD_REQUEST,
        INVALID_REQUEST,
        f"Unsupported MCP-Protocol-Version {value!r}; this server speaks {', '.join(SUPPORTED)}",
        request_id=request_id,
    )


def is_initialize(body: Body) -> bool:
    """True when the body is a single initialize request."""
    return (not body.is_batch and len(body.messages) == 1
            and body.messages[0].kind == REQUEST and body.messages[0].method == "initialize")


def missing_session_message(body: Body) -> str:
    """Why a POST without Mcp-Session-Id is refused: an initialize that is not a lone request, or no session."""
    if any(message.method == "initialize" for message in body.messages):
        return ("Invalid Request: initialize opens a session only as a lone request with an id (not in a batch, not "
                "as a notification); send it on its own, then echo the Mcp-Session-Id it returns")
    return "Missing Mcp-Session-Id header: send initialize first and echo the id it returns"


class SessionReplay:
    """A request stream's part of its session's replay log, under a key of its own, so Last-Event-ID resumes it."""

    def __init__(self, server: Server, session: Session) -> None:
        self.server = server
        self.session = session

    @cached_property
    def key(self) -> str:
        """The stream's key in the replay log, drawn when first needed: a call answered as JSON keeps nothing."""
        return secrets.token_hex(6)

    def keep(self, message: dict[str, Any]) -> str | None:
        """Publish a message the request sends; its event id."""
        return self.server.publish(self.session.id, message, stream=self.key)

    def keep_response(self, response: dict[str, Any]) -> str | None:
        """Store the request's response (retried through an outage); its event id."""
        return self.server.deliver(self.session.id, response, stream=self.key)


def streamable_post(server: Server, environ: Mapping[str, Any], caller: Principal | None, body: Body
                    ) -> Response:
    """Handle a Streamable HTTP POST (its body already read): initialize opens a session, the rest need one."""
    accepted = AcceptedTypes(environ.get("HTTP_ACCEPT"))
    if not (accepted.json or accepted.sse):
        raise HttpProblem(HTTPStatus.NOT_ACCEPTABLE, INVALID_REQUEST,
                          "Not Acceptable: the Accept header must allow application/json or text/event-stream",
                          request_id=body.request_id)
    session_id = session_id_from(environ, query=False)
    if is_initialize(body) and session_id is None:
        return initialize_session(server, environ, caller, body, accepted)
    if session_id is None:
        raise HttpProblem(HTTPStatus.BAD_REQUEST, INVALID_REQUEST, missing_session_message(body),
                          request_id=body.request_id)
    session = lookup_session(server, session_id, STREAMABLE, name_of(caller), body.request_id)
    check_protocol_header(environ.get(PROTOCOL_VERSION_KEY), body.request_id)
    return post_messages(server, session, body, accepted, new_session=False,
                         close_connection=connection_closer(environ), caller=caller)


def initialize_session(server: Server, environ: Mapping[str, Any], caller: Principal | None, body: Body,
                       accepted: AcceptedTypes) -> Response:
    """Open a session for an initialize request; if the initialize fails, close it again and name no session."""
    try:
        session = server.open_session(STREAMABLE, name_of(caller), environ.get("REMOTE_ADDR"))
    except CapacityError as full:
        raise server_busy(full) from None
    except StoreUnavailable:
        raise store_unavailable(body.messages[0].id) from None
    response = post_messages(server, session, body, accepted, new_session=True,
                             close_connection=connection_closer(environ), caller=caller)
    if response.status_code >= HTTPStatus.BAD_REQUEST:
        discard_session(server, session)
        response.headers.pop(SESSION_HEADER, None)
    return response


def discard_session(server: Server, session: Session) -> None:
    """Close a session whose initialize failed; if the store is down too, its idle TTL ends it."""
    try:
        server.close_session(session.id)
    except StoreUnavailable:
        pass


def streamable_get(server: Server, environ: Mapping[str, Any], caller: Principal | None) -> Response:
    """Open a session's standalone stream."""
    if not AcceptedTypes(environ.get("HTTP_ACCEPT")).sse:
        raise HttpProblem(HTTPStatus.NOT_ACCEPTABLE, INVALID_REQUEST,
                          "Not Acceptable: the stream needs 'Accept: text/event-stream'")
    session = lookup_session(server, session_id_from(environ, query=False), STREAMABLE, name_of(caller))
    check_protocol_header(environ.get(PROTOCOL_VERSION_KEY))
    return open_stream(server, environ, session)


def streamable_delete(server: Server, environ: Mapping[str, Any], caller: Principal | None) -> Response:
    """End a Streamable HTTP session."""
    session_id = session_id_from(environ, query=False)
    if session_id is None:
        raise HttpProblem(HTTPStatus.BAD_REQUEST, INVALID_REQUEST, "Missing Mcp-Session-Id header")
    session = lookup_session(server, session_id, STREAMABLE, name_of(caller))
    check_protocol_header(environ.get(PROTOCOL_VERSION_KEY))
    return close_session(server, session)


def post_messages(server: Server, session: Session, body: Body, accepted: AcceptedTypes,
                  new_session: bool, close_connection: Callable[[], None] | None = None,
                  caller: Principal | None = None) -> Response:
    """Handle a POST of caller's on an existing (or just created) session."""
    headers = {SESSION_HEADER: session.id} if new_session else {}
    rejected = server.batch_error(session, body)
    if rejected is not None:
        return json_response(rejected, HTTPStatus.BAD_REQUEST, headers)
    if body.is_batch or not accepted.sse:
        # Messages sent before the result go to the standalone stream, so nothing is lost.
        running, errors = server.accept(session, body, lambda m: server.publish(session.id, m),
                                            caller=caller)
        return answer_as_json(server, body, running, errors, headers)
    message = body.messages[0]
    if accepted.json and message.kind == REQUEST and answers_alone(server, message):
        # Nothing can come before the result: run it here, without a greenlet and a stream to wait on.
        return single_answer(server.run_here(session, message, caller), headers)
    replay = SessionReplay(server, session)
    # Bounded like every stream: a client that does not read is cut off (close_connection fails the blocked write),
    # and what it missed stays in the replay for it to resume with Last-Event-ID.
    stream = RequestStream(f"session {session.id[:8]}", server.settings.queue_max,
                           server.settings.queue_max_bytes,
                           close_connection, replay)
    running, errors = server.accept(session, body, stream, caller=caller)
    if not running:
        return answer_as_json(server, body, running, errors, headers)
    greenlet = running[0]
    first = stream.first_item(greenlet)
    if first is DONE and (accepted.json or is_store_unavailable(greenlet.value)
                          or not isinstance(greenlet.value, dict)):
        return single_answer(greenlet.value, headers)
    # The priming event (an id, no data) lets the client resume even before any message.
    priming = ((priming_frame(join_event_id("0", replay.key), RETRY_MS),)
               if at_least(session.protocol_version, PRIMING_SINCE) else ())
    return stream.response(first, greenlet, None, headers, priming)


def answers_alone(server: Server, message: Message) -> bool:
    """Whether a request can send nothing before its result: a tools/call of a tool that takes no ctx.

    Only the request context sends (progress, log messages, questions to the client, a notification); a tool
    without ctx never has one.
    """
    if message.method != "tools/call":
        return False
    name = message.params.get("name")
    tool = server.registry.tools.get(name) if isinstance(name, str) else None
    return tool is not None and not tool.wants_context


def single_answer(value: Any, headers: dict[str, str]) -> Response:
    """A lone request's answer that said nothing before it: JSON, or 503 for the store's outage."""
    if is_store_unavailable(value):
        return store_unavailable_response(value, headers)
    if not isinstance(value, dict):
        # Cancelled before it said anything: an event stream that ends without a response.
        return Response(iter([KEEPALIVE_FRAME]), content_type=EVENT_STREAM_CONTENT_TYPE,
                        headers={**SSE_HEADERS, **headers})
    return json_response(value, headers=headers)


def answer_as_json(server: Server, body: Body, running: list, errors: list,
                   headers: dict[str, str]) -> Response:
    """Wait for the requests and answer with their responses as one JSON body."""
    if not running and not errors:
        return empty_response(HTTPStatus.ACCEPTED, headers)
    answers = answers_of(running, errors)
    if not answers:
        return empty_response(HTTPStatus.ACCEPTED, headers)
    if not body.is_batch and is_store_unavailable(answers[0]):
        return store_unavailable_response(answers[0], headers)
    status = HTTPStatus.BAD_REQUEST if not running else 200
    return json_response(answers if body.is_batch else answers[0], status, headers)


def is_store_unavailable(response: Any) -> bool:
    """True when a response is the error of a request that the session store's outage stopped (answered 503)."""
    error = response.get("error") if isinstance(response, dict) else None
    return (isinstance(error, dict) and error.get("code") == SERVER_UNAVAILABLE
            and error.get("message") == STORE_UNAVAILABLE_MESSAGE)


def store_unavailable_response(answer: dict[str, Any], headers: dict[str, str]) -> Response:
    """A request the session store's outage stopped: 503 with Retry-After, and the -32004 answer carrying its id."""
    return json_response(answer, HTTPStatus.SERVICE_UNAVAILABLE, {**headers, "Retry-After": str(STORE_RETRY_AFTER_S)})


def open_stream(server: Server, environ: Mapping[str, Any], session: Session) -> Response:
    """Open the session's standalone stream; a second one at the same time gets 409 unless it resumes."""
    # A client resuming with Last-Event-ID has lost its stream, though the server learns that only at its next
    # write to it (up to two keepalives later): the resuming stream replaces the old one instead of a 409.
    try:
        last_event_id = environ.get("HTTP_LAST_EVENT_ID")
        subscription = server.subscribe(session.id, last_event_id, exclusive=last_event_id is None)
    except StreamConflict:
        raise HttpProblem(
            HTTPStatus.CONFLICT,
            INVALID_REQUEST,
            "This session already has a stream open; close it before opening another",
        ) from None
    # A comment first, so the server sends the status and headers now rather than with the first message.
    subscription.on_cut_off = connection_closer(environ)
    frames = stream_events(subscription, server.settings.keepalive_s, KEEPALIVE_FRAME, kind="standalone")
    # Bytes, handed to the server as they are (no werkzeug wrapper between the server and a stream it may take over).
    return Response(stream_body(environ, frames), content_type=EVENT_STREAM_CONTENT_TYPE, headers=SSE_HEADERS,
                    direct_passthrough=True)


def close_session(server: Server, session: Session) -> Response:
    """End the session; later use of its id gets 404."""
    server.close_session(session.id)
    log.info("closed session %s at the client's request", session.id[:8])
    return empty_response(HTTPStatus.NO_CONTENT)

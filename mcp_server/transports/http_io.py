"""What both HTTP transports read and write: the body (408, 413, 400), the session it names (400, 404), which
answers its Accept header takes, and the answers: JSON and empty responses, HttpProblem, the JSON 500.

Plus the 503s they answer when the session store is down or the server holds all the sessions it may, and the
refusal log line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

import gevent
from flask import Response
from gunicorn.http.errors import NoMoreData, ParseException

from mcp_server.dispatcher import Dispatcher
from mcp_server.encoding import dumps_line
from mcp_server.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    SERVER_UNAVAILABLE,
    STORE_RETRY_AFTER_S,
    STORE_UNAVAILABLE_MESSAGE,
    error_response,
    new_correlation_id,
)
from mcp_server.hub import CapacityError
from mcp_server.limits import BodyLimitExceeded, check_body
from mcp_server.logs import loggable
from mcp_server.messages import Body, Message, ParseFailure, parse_body
from mcp_server.session import SESSION_ID_MAX_CHARS, SESSION_ID_PATTERN, SESSION_ID_SYNTAX, Session, session_id_from
from mcp_server.transports.event_stream import EVENT_STREAM

__all__ = ["JSON", "AcceptedTypes", "HttpProblem", "empty_response", "json_response", "log_refusal", "lookup_session",
           "problem_response", "read_body", "read_messages", "server_busy", "store_unavailable",
           "unexpected_error_response"]

log = logging.getLogger("mcp.http")
JSON = "application/json"


def json_response(body: Any, status: int = HTTPStatus.OK, headers: Mapping[str, str] | None = None) -> Response:
    """Return body as compact JSON ending with a newline (so curl prints a clean line)."""
    return Response(dumps_line(body), status=status, headers=dict(headers or {}), content_type=JSON)


def empty_response(status: int, headers: Mapping[str, str] | None = None) -> Response:
    """Return a response with no body and no Content-Type (202 Accepted, 204 No Content)."""
    response = Response(status=status, headers=dict(headers or {}))
    del response.headers["Content-Type"]
    return response


class HttpProblem(Exception):
    """Abort a request with an HTTP status and a JSON-RPC error body that says how to fix it."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        *,
        request_id: Any = None,
        data: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = error_response(request_id, code, message, data)
        self.headers = dict(headers or {})


def problem_response(problem: HttpProblem) -> Response:
    """Render an HttpProblem."""
    return json_response(problem.body, problem.status, problem.headers)


def unexpected_error_response(environ: Mapping[str, Any]) -> Response:
    """Log the exception being handled with a correlation id; answer 500 naming only the id."""
    correlation_id = new_correlation_id()
    log.exception("unhandled error on %s %s (correlation id %s)", loggable(environ.get("REQUEST_METHOD")),
                  loggable(environ.get("PATH_INFO")), correlation_id)
    return json_response(error_response(None, INTERNAL_ERROR, "Internal error", {"correlationId": correlation_id}),
                         HTTPStatus.INTERNAL_SERVER_ERROR)


def log_refusal(environ: Mapping[str, Any], status: int) -> None:
    """Log an HTTP-level refusal (status 400 or more) on one line."""
    if status < HTTPStatus.BAD_REQUEST:
        return
    session = session_id_from(environ) or "-"
    log.info("http method=%s path=%s session=%s status=%d", loggable(environ.get("REQUEST_METHOD")),
             loggable(environ.get("PATH_INFO")), loggable(session[:8]), status)


class AcceptedTypes:
    """Which of JSON and SSE an Accept header allows (no header allows both)."""

    def __init__(self, header: str | None) -> None:
        types = {part.split(";", 1)[0].strip().lower() for part in (header or "*/*").split(",")}
        self.json = bool(types & {"application/json", "application/*", "*/*"})
        self.sse = bool(types & {EVENT_STREAM, "text/*", "*/*"})


def store_unavailable(request_id: Any = None) -> HttpProblem:
    """The 503 for a session store that does not answer (with the request's id when there is one)."""
    return HttpProblem(HTTPStatus.SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE, STORE_UNAVAILABLE_MESSAGE,
                       request_id=request_id, headers={"Retry-After": str(STORE_RETRY_AFTER_S)})


def server_busy(full: CapacityError) -> HttpProblem:
    """The 503 for a server (or principal) holding all the sessions it may."""
    return HttpProblem(HTTPStatus.SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE, f"Server busy: {full}; retry later",
                       headers={"Retry-After": "5"})


def lookup_session(dispatcher: Dispatcher, session_id: str | None, transport: str, principal: str | None,
                   request_id: Any = None, call: Message | None = None) -> Session:
    """Load a session for this principal and transport; 400 if malformed, 404 if not found (with the request's id).

    Malformed means no session id at all by the specification: empty, over SESSION_ID_MAX_CHARS, or a character
    outside visible ASCII. An id that is well formed but not of our shape was never issued here: 404, as for any
    session the server does not know, so the client starts a new one. For a body that is one tools/call (call),
    the hub may take the call's slot in the same step (limits.CallSlots.session_for_call).
    """
    # Another principal's session is reported as missing, so its existence is not confirmed; and it is compared
    # before the lookup touches anything, so a foreign probe does not keep the session alive.
    if session_id is None or not SESSION_ID_PATTERN.fullmatch(session_id):  # our own ids take this one match
        if not session_id or not SESSION_ID_SYNTAX.fullmatch(session_id):
            raise HttpProblem(HTTPStatus.BAD_REQUEST, INVALID_REQUEST,
                              f"Malformed session id: a session id is 1 to {SESSION_ID_MAX_CHARS} visible ASCII "
                              "characters; send the one the server gave you", request_id=request_id)
        session = None  # well formed, but not an id new_session_id makes: no store holds it
    elif call is None:
        session = dispatcher.hub.get_own_session(session_id, transport, principal)
    else:
        session = dispatcher.call_slots.session_for_call(session_id, transport, principal, call)
    if session is None:
        raise HttpProblem(HTTPStatus.NOT_FOUND, INVALID_REQUEST,
                          "Unknown or expired session: start a new one (GET /mcp for SSE, or POST initialize)",
                          request_id=request_id)
    return session


class BodyTimedOut(Exception):
    """The request body did not arrive within MCP_BODY_TIMEOUT_S."""


def read_body(dispatcher: Dispatcher, environ: Mapping[str, Any]) -> Body:
    """Check Content-Type and size, then read within MCP_BODY_TIMEOUT_S and parse; 415, 413, 408 or 400."""
    mimetype = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
    if mimetype != "application/json" and not mimetype.endswith("+json"):
        raise HttpProblem(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE, INVALID_REQUEST,
            "Unsupported Content-Type: send JSON with -H 'Content-Type: application/json'",
        )
    limit = dispatcher.settings.max_body_bytes
    declared = environ.get("CONTENT_LENGTH")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    # The whole body, not each read: a client sending a byte a second would otherwise hold its connection forever.
    try:
        with gevent.Timeout(dispatcher.settings.body_timeout_s, BodyTimedOut):
            data = environ["wsgi.input"].read(limit + 1)
    except BodyTimedOut:
        raise HttpProblem(HTTPStatus.REQUEST_TIMEOUT, INVALID_REQUEST,
                          f"Request body not received within {dispatcher.settings.body_timeout_s:g} s "
                          "(MCP_BODY_TIMEOUT_S): send the whole body at once") from None
    except (ParseException, NoMoreData):
        # gunicorn raises these from the read when a chunked body is malformed or ends early.
        raise HttpProblem(HTTPStatus.BAD_REQUEST, INVALID_REQUEST,
                          "Malformed request body: bad chunked encoding or a body cut short; "
                          "send it with Content-Length or as valid chunks") from None
    if len(data) > limit:
        raise too_large(limit)
    try:
        body = parse_body(data)
    except ParseFailure as failure:
        raise HttpProblem(HTTPStatus.BAD_REQUEST, failure.response["error"]["code"],
                          failure.response["error"]["message"]) from None
    try:
        check_body(body, data, dispatcher.settings)
    except BodyLimitExceeded as exceeded:
        raise HttpProblem(exceeded.status, exceeded.code, str(exceeded)) from None
    return body


def read_messages(dispatcher: Dispatcher, environ: Mapping[str, Any]) -> Body:
    """Read the body, then charge a batch to the rate limit by its messages (the request counted as one)."""
    body = read_body(dispatcher, environ)
    if body.is_batch and len(body.messages) > 1 and dispatcher.charge_batch is not None:
        dispatcher.charge_batch(len(body.messages))
    return body


def too_large(limit: int) -> HttpProblem:
    """The 413 for a body over MCP_MAX_BODY_BYTES."""
    return HttpProblem(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, INVALID_REQUEST,
                       f"Request body too large: the limit is {limit} bytes (MCP_MAX_BODY_BYTES)")

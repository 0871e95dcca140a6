"""POSTs to /mcp and /messages, for both transports, written against the WSGI environ.

The Flask view and the WSGI hot path (hot_path.py) both call `handle_post`, so a
POST is checked and answered by the same lines whichever way it came in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

import gevent
from flask import Response
from gunicorn.http.errors import NoMoreData, ParseException

from mcp_server.dispatcher import Dispatcher
from mcp_server.errors import INVALID_REQUEST, SERVER_UNAVAILABLE, STORE_RETRY_AFTER_S, STORE_UNAVAILABLE_MESSAGE
from mcp_server.hub import CapacityError, HubUnavailable
from mcp_server.limits import BodyLimitExceeded, check_body
from mcp_server.messages import Body, ParseFailure, parse_body
from mcp_server.session import SSE, STREAMABLE, Session
from mcp_server.transports import legacy_sse, streamable_http
from mcp_server.transports.http_responses import HttpProblem

__all__ = ["handle_post", "legacy_session_param", "lookup_session", "query_of", "server_busy", "store_unavailable"]

SESSION_ID_PATTERN = re.compile(r"^[0-9a-f]{32}$")
HTTP_400_BAD_REQUEST = 400
HTTP_404_NOT_FOUND = 404
HTTP_406_NOT_ACCEPTABLE = 406
HTTP_408_REQUEST_TIMEOUT = 408
HTTP_413_PAYLOAD_TOO_LARGE = 413
HTTP_415_UNSUPPORTED_MEDIA_TYPE = 415
HTTP_503_SERVICE_UNAVAILABLE = 503
# The paths that take legacy messages only (the SDKs' default), as opposed to /mcp, which takes both.
LEGACY_ONLY_PATHS = ("/messages", "/messages/")


def query_of(environ: Mapping[str, Any]) -> dict[str, str]:
    """The query string's parameters, first value of each."""
    query = environ.get("QUERY_STRING", "")
    if not query:
        return {}
    return {name: values[0] for name, values in parse_qs(query, keep_blank_values=True).items()}


def legacy_session_param(query: Mapping[str, str]) -> str | None:
    """The session id of a legacy POST or resume, from ?session_id= or ?sessionId=."""
    return query.get("session_id", query.get("sessionId"))


def store_unavailable(request_id: Any = None) -> HttpProblem:
    """The 503 for a session store that does not answer (with the request's id when there is one)."""
    return HttpProblem(HTTP_503_SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE, STORE_UNAVAILABLE_MESSAGE,
                       request_id=request_id, headers={"Retry-After": str(STORE_RETRY_AFTER_S)})


def server_busy(full: CapacityError) -> HttpProblem:
    """The 503 for a server (or principal) holding all the sessions it may."""
    return HttpProblem(HTTP_503_SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE, f"Server busy: {full}; retry later",
                       headers={"Retry-After": "5"})


def lookup_session(core: Dispatcher, session_id: str | None, transport: str, principal: str | None) -> Session:
    """Load a session for this principal and transport; 400 if malformed, 404 if not found."""
    if not session_id or not SESSION_ID_PATTERN.match(session_id):
        raise HttpProblem(HTTP_400_BAD_REQUEST, INVALID_REQUEST,
                          "Malformed session id: expected the 32 hex characters the server gave you")
    # Another principal's session is reported as missing, so its existence is not confirmed; and it is compared
    # before the lookup touches anything, so a foreign probe does not keep the session alive.
    session = core.hub.get_session(
        session_id, accept=lambda stored: stored.transport == transport and stored.principal == principal)
    if session is None:
        raise HttpProblem(HTTP_404_NOT_FOUND, INVALID_REQUEST,
                          "Unknown or expired session: start a new one (GET /mcp for SSE, or POST initialize)")
    return session


class BodyTimedOut(Exception):
    """The request body did not arrive within MCP_BODY_TIMEOUT_S."""


def read_body(core: Dispatcher, environ: Mapping[str, Any]) -> Body:
    """Check Content-Type and size, then read within MCP_BODY_TIMEOUT_S and parse; 415, 413, 408 or 400."""
    mimetype = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
    if mimetype != "application/json" and not mimetype.endswith("+json"):
        raise HttpProblem(
            HTTP_415_UNSUPPORTED_MEDIA_TYPE, INVALID_REQUEST,
            "Unsupported Content-Type: send JSON with -H 'Content-Type: application/json'",
        )
    limit = core.settings.max_body_bytes
    declared = environ.get("CONTENT_LENGTH")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    # The whole body, not each read: a client sending a byte a second would otherwise hold its connection forever.
    try:
        with gevent.Timeout(core.settings.body_timeout_s, BodyTimedOut):
            data = environ["wsgi.input"].read(limit + 1)
    except BodyTimedOut:
        raise HttpProblem(HTTP_408_REQUEST_TIMEOUT, INVALID_REQUEST,
                          f"Request body not received within {core.settings.body_timeout_s:g} s "
                          "(MCP_BODY_TIMEOUT_S): send the whole body at once") from None
    except (ParseException, NoMoreData):
        # gunicorn raises these from the read when a chunked body is malformed or ends early.
        raise HttpProblem(HTTP_400_BAD_REQUEST, INVALID_REQUEST,
                          "Malformed request body: bad chunked encoding or a body cut short; "
                          "send it with Content-Length or as valid chunks") from None
    if len(data) > limit:
        raise too_large(limit)
    try:
        body = parse_body(data)
    except ParseFailure as failure:
        raise HttpProblem(HTTP_400_BAD_REQUEST, failure.response["error"]["code"],
                          failure.response["error"]["message"]) from None
    try:
        check_body(body, data, core.settings)
    except BodyLimitExceeded as exceeded:
        raise HttpProblem(exceeded.status, exceeded.code, str(exceeded)) from None
    return body


def read_messages(core: Dispatcher, environ: Mapping[str, Any]) -> Body:
    """Read the body, then charge a batch to the rate limit by its messages (the request counted as one)."""
    body = read_body(core, environ)
    if body.is_batch and len(body.messages) > 1 and core.charge_batch is not None:
        core.charge_batch(len(body.messages))
    return body


def too_large(limit: int) -> HttpProblem:
    """The 413 for a body over MCP_MAX_BODY_BYTES."""
    return HttpProblem(HTTP_413_PAYLOAD_TOO_LARGE, INVALID_REQUEST,
                       f"Request body too large: the limit is {limit} bytes (MCP_MAX_BODY_BYTES)")


def handle_post(core: Dispatcher, environ: Mapping[str, Any], principal: str | None) -> Response:
    """Answer a POST: a legacy message when the query names a session (or the path is /messages), else Streamable."""
    query = query_of(environ)
    session_id = legacy_session_param(query)
    if session_id is not None or environ.get("PATH_INFO") in LEGACY_ONLY_PATHS:
        return legacy_post(core, environ, session_id, principal)
    return streamable_post(core, environ, principal)


def legacy_post(core: Dispatcher, environ: Mapping[str, Any], session_id: str | None,
                principal: str | None) -> Response:
    """Accept a legacy message; the answer goes to the session's stream."""
    if session_id is None:
        raise HttpProblem(HTTP_400_BAD_REQUEST, INVALID_REQUEST,
                          "Missing session id: POST to the endpoint URL the stream sent (…?session_id=<id>)")
    session = lookup_session(core, session_id, SSE, principal)
    return legacy_sse.post_message(core, session, read_messages(core, environ))


def streamable_post(core: Dispatcher, environ: Mapping[str, Any], principal: str | None) -> Response:
    """Handle a Streamable HTTP POST."""
    accepted = streamable_http.AcceptedTypes(environ.get("HTTP_ACCEPT"))
    if not (accepted.json or accepted.sse):
        raise HttpProblem(HTTP_406_NOT_ACCEPTABLE, INVALID_REQUEST,
                          "Not Acceptable: the Accept header must allow application/json or text/event-stream")
    body = read_messages(core, environ)
    session_id = environ.get("HTTP_MCP_SESSION_ID")
    if streamable_http.is_initialize(body) and session_id is None:
        try:
            session = core.open_session(STREAMABLE, principal, environ.get("REMOTE_ADDR"))
        except CapacityError as full:
            raise server_busy(full) from None
        except HubUnavailable:
            raise store_unavailable(body.messages[0].id) from None
        response = streamable_http.post_messages(core, session, body, accepted, new_session=True)
        if response.status_code >= 400:
            discard_session(core, session)
            response.headers.pop(streamable_http.SESSION_HEADER, None)
        return response
    if session_id is None:
        raise HttpProblem(HTTP_400_BAD_REQUEST, INVALID_REQUEST,
                          "Missing Mcp-Session-Id header: send initialize first and echo the id it returns")
    session = lookup_session(core, session_id, STREAMABLE, principal)
    streamable_http.check_protocol_header(environ.get("HTTP_MCP_PROTOCOL_VERSION"))
    return streamable_http.post_messages(core, session, body, accepted, new_session=False)


def discard_session(core: Dispatcher, session: Session) -> None:
    """Close a session whose initialize failed; if the store is down too, its idle TTL ends it."""
    try:
        core.hub.close_session(session.id)
    except HubUnavailable:
        pass

"""The HTTP routes: one path, `/mcp`, serving both transports, plus the SDKs' default paths.

How a request is told apart (see the README's endpoint table):
GET without Mcp-Session-Id is a legacy stream; POST with `?session_id=` is a legacy
message; everything else on /mcp is Streamable HTTP.
"""

from __future__ import annotations

import re

from flask import Blueprint, Response, current_app, g, request
from werkzeug.exceptions import MethodNotAllowed

from mcp_server import sse, streamable
from mcp_server.core import McpCore
from mcp_server.errors import INVALID_REQUEST, SERVER_UNAVAILABLE
from mcp_server.hub import CapacityError, HubUnavailable
from mcp_server.limits import BodyLimitExceeded, check_body
from mcp_server.messages import Body, ParseFailure, parse_body
from mcp_server.responses import HttpProblem, problem_response
from mcp_server.security import screen_request
from mcp_server.session import SSE, STREAMABLE, Session

__all__ = ["blueprint", "current_core"]

blueprint = Blueprint("mcp", __name__)

SESSION_ID_PATTERN = re.compile(r"^[0-9a-f]{32}$")
HTTP_400_BAD_REQUEST = 400
HTTP_404_NOT_FOUND = 404
HTTP_406_NOT_ACCEPTABLE = 406
HTTP_413_PAYLOAD_TOO_LARGE = 413
HTTP_415_UNSUPPORTED_MEDIA_TYPE = 415
HTTP_503_SERVICE_UNAVAILABLE = 503


def current_core() -> McpCore:
    """The McpCore of the app handling this request."""
    return current_app.extensions["mcp"].core


@blueprint.errorhandler(HubUnavailable)
def session_store_unavailable(_: HubUnavailable) -> Response:
    """Redis is unreachable: answer 503 at once on every path (open, resume, post, delete), never 500."""
    return problem_response(HttpProblem(HTTP_503_SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE,
                                        "Session store unavailable; retry shortly", headers={"Retry-After": "2"}))


@blueprint.before_request
def check_request_source() -> None:
    """Refuse foreign origins and unexpected Host headers, then authenticate; sets g.principal."""
    g.principal = screen_request()


# routing
@blueprint.route("/mcp", methods=["GET", "POST", "DELETE"])
def mcp_endpoint() -> Response:
    """Serve /mcp for both transports."""
    if request.method == "GET":
        if streamable.SESSION_HEADER in request.headers:
            return streamable_get()
        return legacy_get("/mcp")
    if request.method == "POST":
        if legacy_session_param() is not None:
            return legacy_post()
        return streamable_post()
    if request.method == "DELETE":
        return streamable_delete()
    # Flask adds HEAD to every GET route: HEAD must never end a session (nor open a stream nobody reads).
    raise MethodNotAllowed(valid_methods=["GET", "POST", "DELETE"])


@blueprint.route("/sse", methods=["GET"])
def sse_alias() -> Response:
    """The official SDKs' default legacy stream path."""
    return legacy_get("/messages")


@blueprint.route("/messages", methods=["POST"])
@blueprint.route("/messages/", methods=["POST"])
def messages_alias() -> Response:
    """The official SDKs' default legacy message path."""
    return legacy_post()


# legacy HTTP+SSE
def legacy_session_param() -> str | None:
    """The session id of a legacy POST or resume, from ?session_id= or ?sessionId=."""
    return request.args.get("session_id", request.args.get("sessionId"))


def legacy_get(endpoint: str) -> Response:
    """Open a new legacy stream, or resume one named by ?session_id=."""
    core = current_core()
    session_id = legacy_session_param()
    resume = find_session(session_id, SSE) if session_id is not None else None
    try:
        return sse.open_stream(core, request.script_root + endpoint, resume,
                               request.headers.get("Last-Event-ID"), g.principal)
    except CapacityError as full:
        raise HttpProblem(HTTP_503_SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE, f"Server busy: {full}; retry later",
                          headers={"Retry-After": "5"}) from None


def legacy_post() -> Response:
    """Accept a legacy message; the answer goes to the session's stream."""
    session_id = legacy_session_param()
    if session_id is None:
        raise HttpProblem(HTTP_400_BAD_REQUEST, INVALID_REQUEST,
                          "Missing session id: POST to the endpoint URL the stream sent (…?session_id=<id>)")
    session = find_session(session_id, SSE)
    body = read_body()
    return sse.post_message(current_core(), session, body)


# Streamable HTTP
def streamable_post() -> Response:
    """Handle a Streamable HTTP POST."""
    core = current_core()
    accepted = streamable.AcceptedTypes(request.headers.get("Accept"))
    if not (accepted.json or accepted.sse):
        raise HttpProblem(HTTP_406_NOT_ACCEPTABLE, INVALID_REQUEST,
                          "Not Acceptable: the Accept header must allow application/json or text/event-stream")
    body = read_body()
    session_id = request.headers.get(streamable.SESSION_HEADER)
    if streamable.is_initialize(body) and session_id is None:
        try:
            session = core.open_session(STREAMABLE, g.principal)
        except CapacityError as full:
            raise HttpProblem(HTTP_503_SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE, f"Server busy: {full}; retry later",
                              headers={"Retry-After": "5"}) from None
        response = streamable.post_messages(core, session, body, accepted, new_session=True)
        if response.status_code >= 400:
            core.hub.close_session(session.id)
            response.headers.pop(streamable.SESSION_HEADER, None)
        return response
    if session_id is None:
        raise HttpProblem(HTTP_400_BAD_REQUEST, INVALID_REQUEST,
                          "Missing Mcp-Session-Id header: send initialize first and echo the id it returns")
    session = find_session(session_id, STREAMABLE)
    streamable.check_protocol_header(request.headers, session)
    return streamable.post_messages(core, session, body, accepted, new_session=False)


def streamable_get() -> Response:
    """Open a session's standalone stream."""
    if not streamable.AcceptedTypes(request.headers.get("Accept")).sse:
        raise HttpProblem(HTTP_406_NOT_ACCEPTABLE, INVALID_REQUEST,
                          "Not Acceptable: the stream needs 'Accept: text/event-stream'")
    session = find_session(request.headers.get(streamable.SESSION_HEADER), STREAMABLE)
    streamable.check_protocol_header(request.headers, session)
    return streamable.open_stream(current_core(), session, request.headers.get("Last-Event-ID"))


def streamable_delete() -> Response:
    """End a Streamable HTTP session."""
    session_id = request.headers.get(streamable.SESSION_HEADER)
    if session_id is None:
        raise HttpProblem(HTTP_400_BAD_REQUEST, INVALID_REQUEST, "Missing Mcp-Session-Id header")
    session = find_session(session_id, STREAMABLE)
    return streamable.close_session(current_core(), session)


# shared checks
def find_session(session_id: str | None, transport: str) -> Session:
    """Load a session for this principal and transport; 400 if malformed, 404 if not found."""
    if not session_id or not SESSION_ID_PATTERN.match(session_id):
        raise HttpProblem(HTTP_400_BAD_REQUEST, INVALID_REQUEST,
                          "Malformed session id: expected the 32 hex characters the server gave you")
    try:
        session = current_core().hub.get_session(session_id)
    except HubUnavailable:
        raise HttpProblem(HTTP_503_SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE,
                          "Session store unavailable; retry shortly", headers={"Retry-After": "2"}) from None
    # Another principal's session is reported as missing, so its existence is not confirmed.
    if session is None or session.transport != transport or session.principal != g.principal:
        raise HttpProblem(HTTP_404_NOT_FOUND, INVALID_REQUEST,
                          "Unknown or expired session: start a new one (GET /mcp for SSE, or POST initialize)")
    return session


def read_body() -> Body:
    """Check Content-Type and size, then parse; 415, 413 or 400 with a JSON-RPC error."""
    mimetype = request.mimetype or ""
    if mimetype != "application/json" and not mimetype.endswith("+json"):
        raise HttpProblem(
            HTTP_415_UNSUPPORTED_MEDIA_TYPE, INVALID_REQUEST,
            "Unsupported Content-Type: send JSON with -H 'Content-Type: application/json'",
        )
    limit = current_core().settings.max_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise too_large(limit)
    data = request.stream.read(limit + 1)
    if len(data) > limit:
        raise too_large(limit)
    try:
        body = parse_body(data)
    except ParseFailure as failure:
        raise HttpProblem(HTTP_400_BAD_REQUEST, failure.response["error"]["code"],
                          failure.response["error"]["message"]) from None
    try:
        check_body(body, data, current_core().settings)
    except BodyLimitExceeded as exceeded:
        raise HttpProblem(exceeded.status, exceeded.code, str(exceeded)) from None
    return body


def too_large(limit: int) -> HttpProblem:
    """The 413 for a body over MCP_MAX_BODY_BYTES."""
    return HttpProblem(HTTP_413_PAYLOAD_TOO_LARGE, INVALID_REQUEST,
                       f"Request body too large: the limit is {limit} bytes (MCP_MAX_BODY_BYTES)")

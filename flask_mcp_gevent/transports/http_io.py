"""What both HTTP transports read and write: the body and its limits (408, 413, 400), the session it names (400,
404), which answers its Accept header takes, and the answers: JSON and empty responses, HttpProblem, the JSON 500.

Plus the 503s they answer when the session store is down or the server holds all the sessions it may, and the
refusal log line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import gevent
from flask import Response
from gunicorn.http.errors import NoMoreData, ParseException

from flask_mcp_gevent.conditions import CapacityError
from flask_mcp_gevent.encoding import dumps, dumps_line, utf8_size
from flask_mcp_gevent.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    SERVER_UNAVAILABLE,
    STORE_RETRY_AFTER_S,
    STORE_UNAVAILABLE_MESSAGE,
    error_response,
    new_correlation_id,
)
from flask_mcp_gevent.logs import loggable
from flask_mcp_gevent.messages import REQUEST, Body, ParseFailure, parse_body
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.session import (
    SESSION_ID_MAX_CHARS,
    SESSION_ID_PATTERN,
    SESSION_ID_SYNTAX,
    Session,
    session_id_from,
)
from flask_mcp_gevent.transports.event_stream import EVENT_STREAM
from flask_mcp_gevent.without_gevent import SERVED, STREAM_NEEDS_GEVENT

if TYPE_CHECKING:
    from flask_mcp_gevent.config import Settings

__all__ = ["JSON", "AcceptedTypes", "BodyLimitExceeded", "HttpProblem", "check_body", "empty_response",
           "json_depth_and_longest_string", "json_response", "log_refusal", "lookup_session", "needs_gevent",
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
    """Which of JSON and SSE an Accept header allows (no header allows both; a type at q=0 is refused)."""

    def __init__(self, header: str | None) -> None:
        if not header or ";" not in header:  # no parameters, so no q=0: any listed range allows what it matches
            types = {part.strip().lower() for part in (header or "*/*").split(",")}
            self.json = bool(types & {JSON, "application/*", "*/*"})
            self.sse = bool(types & {EVENT_STREAM, "text/*", "*/*"})
            return
        weights = media_range_weights(header)
        self.json = allows(weights, JSON)
        self.sse = allows(weights, EVENT_STREAM)


def media_range_weights(header: str) -> dict[str, float]:
    """Each media range of an Accept header with its q value (1 when absent or unreadable; the highest if repeated)."""
    weights: dict[str, float] = {}
    for part in header.split(","):
        media_range, *parameters = part.split(";")
        weight = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = 1.0
        key = media_range.strip().lower()
        weights[key] = max(weight, weights.get(key, 0.0))
    return weights


def allows(weights: dict[str, float], media_type: str) -> bool:
    """Whether the most specific range matching media_type has a q above 0 (RFC 9110 12.5.1)."""
    for media_range in (media_type, media_type.split("/", 1)[0] + "/*", "*/*"):
        if media_range in weights:
            return weights[media_range] > 0
    return False


def store_unavailable(request_id: Any = None) -> HttpProblem:
    """The 503 for a session store that does not answer (with the request's id when there is one)."""
    return HttpProblem(HTTPStatus.SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE, STORE_UNAVAILABLE_MESSAGE,
                       request_id=request_id, headers={"Retry-After": str(STORE_RETRY_AFTER_S)})


def server_busy(full: CapacityError) -> HttpProblem:
    """The 503 for a server (or principal) holding all the sessions it may."""
    return HttpProblem(HTTPStatus.SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE, f"Server busy: {full}; retry later",
                       headers={"Retry-After": "5"})


def lookup_session(server: Server, session_id: str | None, transport: str, principal: str | None,
                   request_id: Any = None) -> Session:
    """Load a session for this principal and transport; 400 if malformed, 404 if not found (with the request's id).

    Malformed means no session id at all by the specification: empty, over SESSION_ID_MAX_CHARS, or a character
    outside visible ASCII. An id that is well formed but not of our shape was never issued here: 404, as for any
    session the server does not know, so the client starts a new one.
    """
    # Another principal's session is reported as missing, so its existence is not confirmed; and it is compared
    # before the lookup touches anything, so a foreign probe does not keep the session alive.
    if session_id is None or not SESSION_ID_PATTERN.fullmatch(session_id):  # our own ids take this one match
        if not session_id or not SESSION_ID_SYNTAX.fullmatch(session_id):
            raise HttpProblem(HTTPStatus.BAD_REQUEST, INVALID_REQUEST,
                              f"Malformed session id: a session id is 1 to {SESSION_ID_MAX_CHARS} visible ASCII "
                              "characters; send the one the server gave you", request_id=request_id)
        session = None  # well formed, but not an id new_session_id makes: no store holds it
    else:
        session = server.find_session(session_id, transport, principal)
    if session is None:
        raise HttpProblem(HTTPStatus.NOT_FOUND, INVALID_REQUEST,
                          "Unknown or expired session: start a new one (GET /mcp for SSE, or POST initialize)",
                          request_id=request_id)
    return session


class BodyTimedOut(Exception):
    """The request body did not arrive within MCP_BODY_TIMEOUT_S."""


def read_body(server: Server, environ: Mapping[str, Any]) -> Body:
    """Check Content-Type and size, then read within MCP_BODY_TIMEOUT_S and parse; 415, 413, 408 or 400."""
    mimetype = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
    if mimetype != "application/json" and not mimetype.endswith("+json"):
        raise HttpProblem(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE, INVALID_REQUEST,
            "Unsupported Content-Type: send JSON with -H 'Content-Type: application/json'",
        )
    limit = server.settings.max_body_bytes
    size = bytes_to_read(environ, limit)
    # The whole body, not each read: a client sending a byte a second would otherwise hold its connection forever.
    try:
        with read_deadline(server.settings.body_timeout_s):
            data = read_input(environ, size) if size else b""
    except BodyTimedOut:
        raise HttpProblem(HTTPStatus.REQUEST_TIMEOUT, INVALID_REQUEST,
                          f"Request body not received within {server.settings.body_timeout_s:g} s "
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
        check_body(body, data, server.settings)
    except BodyLimitExceeded as exceeded:
        raise HttpProblem(exceeded.status, exceeded.code, str(exceeded),
                          request_id=echoable_id(body, server.settings)) from None
    return body


def echoable_id(body: Body, settings: Settings) -> Any:
    """The id a refused body's error carries: the request's, unless the id is itself the string over the limit."""
    request_id = body.request_id
    if isinstance(request_id, str) and utf8_size(request_id) > settings.max_string_bytes:
        return None
    return request_id


def read_input(environ: Mapping[str, Any], size: int) -> bytes:
    """Up to size bytes of the body, from wsgi.input or, when the host's code read it first, from werkzeug.

    A host's before_request or principal_loader that calls request.get_json() spends the input; werkzeug kept the
    body on the request it names in the environ, and made request.stream (which ends at Content-Length) to read it.
    """
    host_request = environ.get("werkzeug.request")
    if host_request is None or "stream" not in vars(host_request):
        return environ["wsgi.input"].read(size)
    return host_request.stream.read(size) or host_request.get_data()[:size]


def bytes_to_read(environ: Mapping[str, Any], limit: int) -> int:
    """How many bytes of wsgi.input make the body: Content-Length, or one past the limit where the server ends it.

    A server sets wsgi.input_terminated when the input ends with the body (gunicorn always; werkzeug's development
    server for a chunked body): reading one byte past the limit then tells an oversized body. Elsewhere the input is
    the connection itself, which ends only when the client closes it, so no more than Content-Length is read, and a
    body with neither is empty.
    """
    declared = environ.get("CONTENT_LENGTH") or ""
    length = int(declared) if declared.isascii() and declared.isdigit() else None
    if length is not None and length > limit:
        raise too_large(limit)
    if environ.get("wsgi.input_terminated"):
        return limit + 1
    if length is None and declared:
        raise HttpProblem(HTTPStatus.BAD_REQUEST, INVALID_REQUEST,
                          f"Malformed Content-Length {declared!r}: send the body's size in bytes, as digits")
    return length or 0


def read_deadline(timeout_s: float) -> AbstractContextManager[Any]:
    """MCP_BODY_TIMEOUT_S over the read; none on a server that is not gevent's (flask run, gthread, sync).

    There the socket is the standard library's: a read blocks the thread without ever running gevent's loop, so the
    timer could never fire (it would only give the thread a store). A slow body holds its thread until it arrives.
    """
    if SERVED.without_gevent:
        return nullcontext()
    return gevent.Timeout(timeout_s, BodyTimedOut)


def read_messages(server: Server, environ: Mapping[str, Any]) -> Body:
    """Read the body, then charge a batch to the rate limit by its messages (the request counted as one)."""
    body = read_body(server, environ)
    if body.is_batch and len(body.messages) > 1 and server.charge_batch is not None:
        server.charge_batch(len(body.messages))
    return body


def needs_gevent(status: int, request_id: Any = None, headers: Mapping[str, str] | None = None,
                 message: str = STREAM_NEEDS_GEVENT) -> HttpProblem:
    """The refusal of a stream where the server is not gevent's: nothing from other requests would reach it."""
    return HttpProblem(status, INVALID_REQUEST, message, request_id=request_id, headers=headers)


def too_large(limit: int) -> HttpProblem:
    """The 413 for a body over MCP_MAX_BODY_BYTES."""
    return HttpProblem(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, INVALID_REQUEST,
                       f"Request body too large: the limit is {limit} bytes (MCP_MAX_BODY_BYTES)")


class BodyLimitExceeded(ValueError):
    """A parsed body breaks a shape limit; carries the HTTP status and the JSON-RPC code to answer with."""

    def __init__(self, status: int, message: str, code: int = INVALID_REQUEST) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def json_depth_and_longest_string(value: Any, max_depth: int) -> tuple[int, int]:
    """Walk decoded JSON without recursion; return (depth, longest string in UTF-8 bytes), stopping past max_depth."""
    deepest = 0
    longest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            # A character is 1 to 4 bytes: encode only when the length alone cannot decide.
            longest = max(longest, len(item) if item.isascii() else len(item.encode("utf-8", "surrogatepass")))
            continue
        if isinstance(item, dict):
            children: Any = [*item.keys(), *item.values()]
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > max_depth:
            return deepest, longest
        stack.extend((child, depth + 1) for child in children)
    return deepest, longest


def check_body(body: Body, data: bytes, settings: Settings) -> None:
    """Raise BodyLimitExceeded when a body is nested too deep, has a too-long string, batch or arguments."""
    if body.is_batch and len(body.messages) > settings.max_batch:
        raise BodyLimitExceeded(
            HTTPStatus.BAD_REQUEST,
            f"Batch too long: {len(body.messages)} messages, the limit is {settings.max_batch} (MCP_MAX_BATCH)",
        )
    # Cheap byte counts first: a body with few brackets cannot be deep, a short one cannot hold a long string.
    may_be_deep = data.count(b"[") + data.count(b"{") > settings.max_json_depth
    may_hold_long_string = len(data) > settings.max_string_bytes
    if may_be_deep or may_hold_long_string:
        raws = [message.raw for message in body.messages]
        depth, longest = json_depth_and_longest_string(raws if body.is_batch else raws[0], settings.max_json_depth)
        if depth > settings.max_json_depth:
            raise BodyLimitExceeded(
                HTTPStatus.BAD_REQUEST,
                f"JSON nested too deeply: the limit is {settings.max_json_depth} levels (MCP_MAX_JSON_DEPTH)",
            )
        if longest > settings.max_string_bytes:
            raise BodyLimitExceeded(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"A string of {longest} bytes exceeds the limit of {settings.max_string_bytes} (MCP_MAX_STRING_BYTES)",
            )
    if len(data) > settings.max_argument_bytes:
        for message in body.messages:
            if message.kind == REQUEST and message.method == "tools/call":
                size = len(dumps(message.params.get("arguments")))
                if size > settings.max_argument_bytes:
                    raise BodyLimitExceeded(
                        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                        f"Tool arguments of {size} bytes exceed the limit of {settings.max_argument_bytes} "
                        "(MCP_MAX_ARGUMENT_BYTES)",
                    )

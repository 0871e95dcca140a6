"""The 2026-07-28 stateless wire on `/mcp`: one POST carries one request, with everything it needs in `_meta`.

No session is read, minted or echoed, and Last-Event-ID means nothing: a request is answered as JSON when it
produces only its result, or as an SSE stream of its own progress and log messages ending with the result.
Closing that stream cancels the request (MCP 2026-07-28 basic/transports/streamable-http.mdx).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from flask import Response

from flask_mcp_gevent.auth.principal import Principal, name_of
from flask_mcp_gevent.eras import STATELESS
from flask_mcp_gevent.errors import INTERNAL_ERROR, INVALID_REQUEST, UNSUPPORTED_PROTOCOL_VERSION, error_response
from flask_mcp_gevent.logs import loggable
from flask_mcp_gevent.messages import INVALID, NOTIFICATION, RESPONSE, Body, Message
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.stateless import validation
from flask_mcp_gevent.stateless.metadata import (
    PROTOCOL_VERSION_KEY,
    STATELESS_VERSIONS,
    ephemeral_session,
    supported_versions,
)
from flask_mcp_gevent.stateless.validation import Rejection
from flask_mcp_gevent.transports.event_stream import DONE, RequestStream, connection_closer
from flask_mcp_gevent.transports.http_io import AcceptedTypes, empty_response, json_response

__all__ = ["environ_headers", "legacy_refused", "method_not_allowed", "stateless_post"]

log = logging.getLogger("mcp.http")

# x-mcp-header parameters by input schema: (schema, parameters), keyed by the schema's id().
HEADER_PARAMS: dict[int, tuple[dict[str, Any], Any]] = {}
MAX_CACHED_SCHEMAS = 4096
ALLOW_POST = {"Allow": "POST"}


def environ_headers(environ: Mapping[str, Any]) -> dict[str, str]:
    """The request's headers by lower-case HTTP name (mcp-name, ...), read from the WSGI environ."""
    found = {key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")}
    if "CONTENT_TYPE" in environ:
        found["content-type"] = environ["CONTENT_TYPE"]
    return found


def method_not_allowed(environ: Mapping[str, Any]) -> Response:
    """405 with Allow: POST for a GET or DELETE on this wire: it has no standalone stream and no session."""
    message = (f"Method {environ.get('REQUEST_METHOD')} is not allowed on the 2026-07-28 wire: send each request "
               "as its own POST (there are no sessions and no GET stream; use subscriptions/listen)")
    return json_response(error_response(None, INVALID_REQUEST, message), HTTPStatus.METHOD_NOT_ALLOWED, ALLOW_POST)


def legacy_refused(environ: Mapping[str, Any], body: Body) -> Response:
    """A session-era POST to a server serving 2026-07-28 only (MCP_SESSION_ERA=0): -32022 naming what it speaks."""
    message = None if body.is_batch else body.messages[0]
    requested = environ.get(PROTOCOL_VERSION_KEY) or ""
    if message is not None and message.method == "initialize":
        version = message.params.get("protocolVersion")
        requested = version if isinstance(version, str) else requested
    error = error_response(
        message.id if message is not None else None, UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version: this server speaks only MCP 2026-07-28 (no initialize, no sessions); send "
        "each request with _meta io.modelcontextprotocol/protocolVersion and an MCP-Protocol-Version header",
        {"supported": list(STATELESS_VERSIONS), "requested": requested})
    return json_response(error, HTTPStatus.BAD_REQUEST)


def refusal(message: Message | None, code: int, text: str) -> Response:
    """A 400 with the request's id (when it has one)."""
    request_id = message.id if message is not None else None
    return json_response(error_response(request_id, code, text), HTTPStatus.BAD_REQUEST)


def stateless_post(server: Server, environ: Mapping[str, Any], caller: Principal | None, body: Body
                   ) -> Response:
    """Serve one 2026-07-28 POST: validate in the specification's order, dispatch, answer as JSON or SSE."""
    if body.is_batch:
        return refusal(None, INVALID_REQUEST, "Invalid Request: JSON-RPC batches are not part of MCP 2026-07-28; "
                       "send one request per POST")
    message = body.messages[0]
    if message.kind == INVALID:
        return json_response(message.error, HTTPStatus.BAD_REQUEST)
    if message.kind == RESPONSE:
        return refusal(message, INVALID_REQUEST, "Invalid Request: this server sends no requests on the "
                       "2026-07-28 wire, so there is nothing to answer")
    if message.kind == NOTIFICATION:
        # notifications/cancelled included: on HTTP a request is cancelled by closing its stream.
        return empty_response(HTTPStatus.ACCEPTED)
    request_headers = environ_headers(environ)
    versions = supported_versions(server.settings.session_era)
    rejection = (STATELESS.validate(message, request_headers, versions)
                 or check_param_headers(server, message, request_headers, caller))
    if rejection is not None:
        return rejected(server, message, rejection)
    accepted = AcceptedTypes(environ.get("HTTP_ACCEPT"))
    if not (accepted.json and accepted.sse):
        return json_response(error_response(message.id, INVALID_REQUEST, "Not Acceptable: the Accept header must "
                                            "allow both application/json and text/event-stream"),
                             HTTPStatus.NOT_ACCEPTABLE)
    return answer(server, ephemeral_session(message.meta, name_of(caller)), message, environ, caller)


def check_param_headers(server: Server, message: Message, request_headers: Mapping[str, str],
                        caller: Principal | None) -> Rejection | None:
    """Check a tools/call's Mcp-Param-* headers against the tool's x-mcp-header annotations."""
    if message.method != "tools/call":
        return None
    name = message.params.get("name")
    tool = server.registry.tools.get(name) if isinstance(name, str) else None
    # tools/call itself answers an unknown tool, and one the caller may not use: a refusal naming a header would
    # tell it that the tool exists and part of its inputSchema.
    if tool is None or (caller is not None and not caller.allows("tool", tool.name)):
        return None
    params = header_params_of(tool.input_schema)
    return validation.check_param_headers(message.raw, request_headers, params) if params else None


def header_params_of(schema: dict[str, Any]) -> Any:
    """The schema's x-mcp-header parameters, worked out once per schema (a tool's schema does not change)."""
    cached = HEADER_PARAMS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    try:
        params = validation.header_params(schema)
    except validation.InvalidHeaderAnnotation:
        params = None  # refused at registration; a tool added at run time with a bad one mirrors nothing
    if len(HEADER_PARAMS) >= MAX_CACHED_SCHEMAS:
        HEADER_PARAMS.clear()  # tools come and go at run time; the live ones are found again on their next call
    # The schema itself is kept beside its answer, so a new schema at a reused id() is never mistaken for it.
    HEADER_PARAMS[id(schema)] = (schema, params)
    return params


def rejected(server: Server, message: Message, rejection: Rejection) -> Response:
    """Answer a request refused before dispatch, logged like any other request."""
    response = rejection.response()
    server.log_call(ephemeral_session({}, None), message.method, message.id, response, 0.0)
    return json_response(response, rejection.http_status)


def has_stream(session: Any, message: Message) -> bool:
    """Whether the request may send anything before its result: progress asked for, log messages, or listen.

    On this wire a request's stream carries only its own progress (with a progressToken) and log messages
    (with a logLevel); anything else reaches the client through subscriptions/listen.
    """
    return ("progressToken" in message.meta or session.log_level is not None
            or message.method == "subscriptions/listen")


def answer(server: Server, session: Any, message: Message, environ: Mapping[str, Any],
           caller: Principal | None) -> Response:
    """Run caller's request; JSON when its result comes first, else an SSE stream that its end (or closing) ends."""
    if not has_stream(session, message):
        # Nothing can come before the result: run it here, without a greenlet and a queue to wait on.
        return json_answer(message, server.run_here(session, message, caller))
    # Only a stream may have to shut the client's socket (a client that stops reading): only a stream looks it up.
    stream = RequestStream(f"{message.method} {loggable(message.id)}", server.settings.queue_max,
                           server.settings.queue_max_bytes, connection_closer(environ))
    greenlet = server.start_request(session, message, stream, caller=caller)
    first = stream.first_item(greenlet)
    if first is DONE:
        return json_answer(message, greenlet.value)
    return stream.response(first, greenlet, server.settings.keepalive_s)


def json_answer(message: Message, value: Any) -> Response:
    """The response as one JSON body, an error with its code's status on this wire."""
    if not isinstance(value, dict):
        # Stopped without an answer (the worker is shutting down): say so rather than send nothing.
        value = error_response(message.id, INTERNAL_ERROR, "The request was stopped before it finished; send it "
                               "again")
    error = value.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    status = validation.http_status(code) if isinstance(code, int) else HTTPStatus.OK
    return json_response(value, status)

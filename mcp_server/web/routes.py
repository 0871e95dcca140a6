"""The HTTP routes: one path, `/mcp`, serving both transports, plus the SDKs' default paths.

How a request is told apart (see the README's endpoint table):
GET without Mcp-Session-Id is a legacy stream; POST with `?session_id=` is a
legacy message, whatever its body; a POST saying 2026-07-28 is the stateless
wire; everything else on /mcp is Streamable HTTP. Each route only
picks the transport function and hands it the dispatcher, the environ and the
principal; `handle_post` is the choice the WSGI hot path shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Blueprint, Response, g, request
from werkzeug.exceptions import MethodNotAllowed

from mcp_server.dispatcher import Dispatcher
from mcp_server.messages import Body
from mcp_server.session import SESSION_HEADER_KEY, session_id_from
from mcp_server.session import SUPPORTED as HANDSHAKE_VERSIONS
from mcp_server.stateless import metadata
from mcp_server.stateless.metadata import PROTOCOL_VERSION_HEADER, PROTOCOL_VERSION_KEY
from mcp_server.transports.http_io import read_messages
from mcp_server.transports.legacy_sse import legacy_get, legacy_post
from mcp_server.transports.stateless_http import legacy_refused, method_not_allowed, stateless_post
from mcp_server.transports.streamable_http import streamable_delete, streamable_get, streamable_post
from mcp_server.web.mcp_app import MCP_BLUEPRINT, current_dispatcher

__all__ = ["LEGACY_ONLY_PATHS", "handle_post", "mcp_blueprint"]

# The paths that take legacy messages only (the SDKs' default), as opposed to /mcp, which takes both.
LEGACY_ONLY_PATHS = ("/messages", "/messages/")


def handle_post(dispatcher: Dispatcher, environ: Mapping[str, Any], principal: str | None,
                legacy_only: bool | None = None) -> Response:
    """Answer a POST: read the body, then serve it on its era's wire.

    legacy_only says whether the path takes legacy messages only (the SDKs' /messages); None reads it from the
    path (the hot path). A legacy message (such a path, or the query names a session) goes to its session whatever
    its body says. Otherwise a 2026-07-28 request (its MCP-Protocol-Version header, or without one its _meta, names
    a version that is not a handshake one) goes to the stateless wire, and the rest is Streamable HTTP.
    """
    # The body first, so that every refusal after it (session, version header) carries the request's id.
    body = read_messages(dispatcher, environ)
    # A ?session_id= names a legacy session's stream: the answer goes there, as on /messages, even for a
    # server/discover an auto-mode client sends first (its error on the stream is what makes the client fall back).
    session_id = session_id_from(environ, header=False) if dispatcher.settings.legacy else None
    if legacy_only is None:
        legacy_only = environ.get("PATH_INFO") in LEGACY_ONLY_PATHS
    legacy_message = legacy_only or session_id is not None
    if not legacy_message and is_stateless(environ, body):
        return stateless_post(dispatcher, environ, principal, body)
    if not dispatcher.settings.legacy:
        return legacy_refused(environ, body)
    if legacy_message:
        return legacy_post(dispatcher, session_id, principal, body)
    return streamable_post(dispatcher, environ, principal, body)


def is_stateless(environ: Mapping[str, Any], body: Body) -> bool:
    """Whether a POST to /mcp belongs to the 2026-07-28 wire (stateless/metadata.http_era decides).

    A request that names a session is legacy traffic unless it says 2026-07-28 outright: a session's client
    sending a version this server has never heard of keeps today's answer (400, the versions it speaks).
    """
    header = environ.get(PROTOCOL_VERSION_KEY)
    if header in HANDSHAKE_VERSIONS:
        return False  # what http_era decides too, for what a session's client sends with every request after the first
    request_headers = {PROTOCOL_VERSION_HEADER: header} if header is not None else {}
    first = None if body.is_batch else body.messages[0].raw
    if metadata.http_era("POST", request_headers, first) is not metadata.Era.STATELESS:
        return False
    return SESSION_HEADER_KEY not in environ or metadata.is_stateless_version((header or "").strip(" \t")) or (
        metadata.is_stateless_version(metadata.body_version(first)))


def names_stateless_wire(environ: Mapping[str, Any]) -> bool:
    """Whether a GET or DELETE names a 2026-07-28 version in its header: that wire answers it with 405."""
    header = environ.get(PROTOCOL_VERSION_KEY)
    return header is not None and metadata.names_stateless_version(header.strip(" \t"))


def mcp_endpoint() -> Response:
    """Serve the MCP endpoint (/mcp) for both transports."""
    if request.method in ("GET", "DELETE") and (not current_dispatcher().settings.legacy
                                                or names_stateless_wire(request.environ)):
        return method_not_allowed(request.environ)
    if request.method == "GET":
        if SESSION_HEADER_KEY in request.environ:
            return streamable_get(current_dispatcher(), request.environ, g.principal)
        # A legacy client posts its messages back to the path it opened the stream on.
        return legacy_get(current_dispatcher(), request.environ, g.principal, request.path)
    if request.method == "POST":
        return handle_post(current_dispatcher(), request.environ, g.principal, legacy_only=False)
    if request.method == "DELETE":
        return streamable_delete(current_dispatcher(), request.environ, g.principal)
    # Flask adds HEAD to every GET route: HEAD must never end a session (nor open a stream nobody reads).
    raise MethodNotAllowed(valid_methods=["GET", "POST", "DELETE"])


def sse_alias(messages_path: str) -> Response:
    """The official SDKs' default legacy stream path; its messages go to messages_path."""
    if not current_dispatcher().settings.legacy:
        return method_not_allowed(request.environ)
    return legacy_get(current_dispatcher(), request.environ, g.principal, messages_path)


def messages_alias() -> Response:
    """The official SDKs' default legacy message path."""
    return handle_post(current_dispatcher(), request.environ, g.principal, legacy_only=True)


def mcp_blueprint(path: str = "/mcp", aliases_under: str = "") -> Blueprint:
    """The MCP routes: the endpoint at path, the SDKs' legacy paths (/sse, /messages) under aliases_under."""
    blueprint = Blueprint(MCP_BLUEPRINT, __name__)
    blueprint.add_url_rule(path, view_func=mcp_endpoint, methods=["GET", "POST", "DELETE"])
    blueprint.add_url_rule(f"{aliases_under}/sse", view_func=sse_alias, methods=["GET"],
                           defaults={"messages_path": f"{aliases_under}/messages"})
    for messages_path in (f"{aliases_under}/messages", f"{aliases_under}/messages/"):
        blueprint.add_url_rule(messages_path, view_func=messages_alias, methods=["POST"])
    return blueprint

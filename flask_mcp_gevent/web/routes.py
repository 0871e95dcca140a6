"""The HTTP routes: one path, `/mcp`, serving both transports, plus the SDKs' default paths.

How a request is told apart (see the endpoint table in docs/wires.md):
GET without Mcp-Session-Id is a legacy stream; POST with `?session_id=` is a
legacy message, whatever its body; a POST saying 2026-07-28 is the stateless
wire; everything else on /mcp is Streamable HTTP. Each route only
picks the transport function and hands it the server, the environ and the
principal; a POST's choice (`pipeline.handle_post`) is one of the steps the WSGI hot path shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from flask import Blueprint, Response, g, request
from werkzeug.exceptions import MethodNotAllowed

from flask_mcp_gevent import eras
from flask_mcp_gevent.session import SESSION_HEADER_KEY
from flask_mcp_gevent.stateless.http import method_not_allowed
from flask_mcp_gevent.stateless.metadata import PROTOCOL_VERSION_KEY
from flask_mcp_gevent.transports.http_io import needs_gevent
from flask_mcp_gevent.transports.legacy_sse import legacy_get
from flask_mcp_gevent.transports.streamable_http import streamable_delete, streamable_get
from flask_mcp_gevent.web.mcp_app import MCP_BLUEPRINT, current_server
from flask_mcp_gevent.web.pipeline import handle_post
from flask_mcp_gevent.without_gevent import SERVED

__all__ = ["mcp_blueprint"]

# What /mcp serves without gevent: POSTs answered as JSON or as their own stream, and DELETE.
ALLOW_WITHOUT_STREAM = "POST, DELETE"


def names_stateless_wire(environ: Mapping[str, Any]) -> bool:
    """Whether a GET or DELETE belongs to the 2026-07-28 era by its header: that wire answers it with 405.

    One that names a session stays on the session's wire unless it says 2026-07-28 outright, as a POST does: an odd
    version header there is the session wire's 400.
    """
    return eras.choose(environ.get(PROTOCOL_VERSION_KEY), None,
                       names_session=SESSION_HEADER_KEY in environ).stateless


def refuse_stream_without_gevent(allow: str) -> None:
    """405 for a GET stream on a server that is not gevent's: what the specification answers for no GET stream.

    allow is what the path still takes there (an empty Allow says: nothing, as configured).
    """
    if SERVED.without_gevent:
        raise needs_gevent(HTTPStatus.METHOD_NOT_ALLOWED, headers={"Allow": allow})


def mcp_endpoint() -> Response:
    """Serve the MCP endpoint (/mcp) for both transports."""
    if request.method in ("GET", "DELETE") and (not current_server().settings.session_era
                                                or names_stateless_wire(request.environ)):
        return method_not_allowed(request.environ)
    if request.method == "GET":
        refuse_stream_without_gevent(ALLOW_WITHOUT_STREAM)
        if SESSION_HEADER_KEY in request.environ:
            return streamable_get(current_server(), request.environ, g.mcp_caller)
        # A legacy client posts its messages back to the path it opened the stream on.
        return legacy_get(current_server(), request.environ, g.mcp_caller, request.path)
    if request.method == "POST":
        return handle_post(current_server(), request.environ, g.mcp_caller, legacy_only=False)
    if request.method == "DELETE":
        return streamable_delete(current_server(), request.environ, g.mcp_caller)
    # Flask adds HEAD to every GET route: HEAD must never end a session (nor open a stream nobody reads).
    raise MethodNotAllowed(valid_methods=["GET", "POST", "DELETE"])


def sse_alias(messages_path: str) -> Response:
    """The official SDKs' default legacy stream path; its messages go to messages_path."""
    if not current_server().settings.session_era:
        return method_not_allowed(request.environ)
    if request.method != "GET":
        # Flask adds HEAD to every GET route: a HEAD must not open a session and a stream nobody reads.
        raise MethodNotAllowed(valid_methods=["GET"])
    refuse_stream_without_gevent("")
    return legacy_get(current_server(), request.environ, g.mcp_caller, messages_path)


def messages_alias() -> Response:
    """The official SDKs' default legacy message path."""
    return handle_post(current_server(), request.environ, g.mcp_caller, legacy_only=True)


def mcp_blueprint(path: str = "/mcp", aliases_under: str = "") -> Blueprint:
    """The MCP routes: the endpoint at path, the SDKs' legacy paths (/sse, /messages) under aliases_under."""
    blueprint = Blueprint(MCP_BLUEPRINT, __name__)
    blueprint.add_url_rule(path, view_func=mcp_endpoint, methods=["GET", "POST", "DELETE"])
    blueprint.add_url_rule(f"{aliases_under}/sse", view_func=sse_alias, methods=["GET"],
                           defaults={"messages_path": f"{aliases_under}/messages"})
    for messages_path in (f"{aliases_under}/messages", f"{aliases_under}/messages/"):
        blueprint.add_url_rule(messages_path, view_func=messages_alias, methods=["POST"])
    return blueprint

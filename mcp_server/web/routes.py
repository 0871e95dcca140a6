"""The HTTP routes: one path, `/mcp`, serving both transports, plus the SDKs' default paths.

How a request is told apart (see the README's endpoint table):
GET without Mcp-Session-Id is a legacy stream; POST with `?session_id=` is a
legacy message, whatever its body; a POST saying 2026-07-28 is the stateless
wire; everything else on /mcp is Streamable HTTP. Each route only
picks the transport function and hands it the dispatcher, the environ and the
principal; a POST's choice (`pipeline.handle_post`) is one of the steps the WSGI hot path shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Blueprint, Response, g, request
from werkzeug.exceptions import MethodNotAllowed

from mcp_server.session import SESSION_HEADER_KEY
from mcp_server.stateless import metadata
from mcp_server.stateless.metadata import PROTOCOL_VERSION_KEY
from mcp_server.transports.legacy_sse import legacy_get
from mcp_server.transports.stateless_http import method_not_allowed
from mcp_server.transports.streamable_http import streamable_delete, streamable_get
from mcp_server.web.mcp_app import MCP_BLUEPRINT, current_dispatcher
from mcp_server.web.pipeline import handle_post

__all__ = ["blueprint"]

blueprint = Blueprint(MCP_BLUEPRINT, __name__)


def names_stateless_wire(environ: Mapping[str, Any]) -> bool:
    """Whether a GET or DELETE names a 2026-07-28 version in its header: that wire answers it with 405."""
    header = environ.get(PROTOCOL_VERSION_KEY)
    return header is not None and metadata.names_stateless_version(header.strip(" \t"))


@blueprint.route("/mcp", methods=["GET", "POST", "DELETE"])
def mcp_endpoint() -> Response:
    """Serve /mcp for both transports."""
    if request.method in ("GET", "DELETE") and (not current_dispatcher().settings.legacy
                                                or names_stateless_wire(request.environ)):
        return method_not_allowed(request.environ)
    if request.method == "GET":
        if SESSION_HEADER_KEY in request.environ:
            return streamable_get(current_dispatcher(), request.environ, g.principal)
        return legacy_get(current_dispatcher(), request.environ, g.principal, "/mcp")
    if request.method == "POST":
        return handle_post(current_dispatcher(), request.environ, g.principal)
    if request.method == "DELETE":
        return streamable_delete(current_dispatcher(), request.environ, g.principal)
    # Flask adds HEAD to every GET route: HEAD must never end a session (nor open a stream nobody reads).
    raise MethodNotAllowed(valid_methods=["GET", "POST", "DELETE"])


@blueprint.route("/sse", methods=["GET"])
def sse_alias() -> Response:
    """The official SDKs' default legacy stream path."""
    if not current_dispatcher().settings.legacy:
        return method_not_allowed(request.environ)
    return legacy_get(current_dispatcher(), request.environ, g.principal, "/messages")


@blueprint.route("/messages", methods=["POST"])
@blueprint.route("/messages/", methods=["POST"])
def messages_alias() -> Response:
    """The official SDKs' default legacy message path."""
    return handle_post(current_dispatcher(), request.environ, g.principal)

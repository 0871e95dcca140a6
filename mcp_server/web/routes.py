"""The HTTP routes: one path, `/mcp`, serving both transports, plus the SDKs' default paths.

How a request is told apart (see the README's endpoint table):
GET without Mcp-Session-Id is a legacy stream; POST with `?session_id=` is a
legacy message; everything else on /mcp is Streamable HTTP. Each route only
picks the transport function and hands it the dispatcher, the environ and the
principal; `handle_post` is the choice the WSGI hot path shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Blueprint, Flask, Response, current_app, g, request
from werkzeug.exceptions import MethodNotAllowed

from mcp_server.dispatcher import Dispatcher
from mcp_server.session import SESSION_HEADER_KEY, session_id_from
from mcp_server.transports.legacy_sse import legacy_get, legacy_post
from mcp_server.transports.streamable_http import streamable_delete, streamable_get, streamable_post

__all__ = ["LEGACY_ONLY_PATHS", "MCP_BLUEPRINT", "blueprint", "core_of", "current_core", "handle_post"]

MCP_BLUEPRINT = "mcp"
blueprint = Blueprint(MCP_BLUEPRINT, __name__)
# The paths that take legacy messages only (the SDKs' default), as opposed to /mcp, which takes both.
LEGACY_ONLY_PATHS = ("/messages", "/messages/")


def core_of(app: Flask) -> Dispatcher:
    """The Dispatcher of an app that has the MCP extension."""
    return app.extensions["mcp"].core


def current_core() -> Dispatcher:
    """The Dispatcher of the app handling this request."""
    return core_of(current_app)


def handle_post(core: Dispatcher, environ: Mapping[str, Any], principal: str | None) -> Response:
    """Answer a POST: a legacy message when the query names a session (or the path is /messages), else Streamable."""
    if session_id_from(environ, header=False) is not None or environ.get("PATH_INFO") in LEGACY_ONLY_PATHS:
        return legacy_post(core, environ, principal)
    return streamable_post(core, environ, principal)


@blueprint.route("/mcp", methods=["GET", "POST", "DELETE"])
def mcp_endpoint() -> Response:
    """Serve /mcp for both transports."""
    if request.method == "GET":
        if SESSION_HEADER_KEY in request.environ:
            return streamable_get(current_core(), request.environ, g.principal)
        return legacy_get(current_core(), request.environ, g.principal, "/mcp")
    if request.method == "POST":
        return handle_post(current_core(), request.environ, g.principal)
    if request.method == "DELETE":
        return streamable_delete(current_core(), request.environ, g.principal)
    # Flask adds HEAD to every GET route: HEAD must never end a session (nor open a stream nobody reads).
    raise MethodNotAllowed(valid_methods=["GET", "POST", "DELETE"])


@blueprint.route("/sse", methods=["GET"])
def sse_alias() -> Response:
    """The official SDKs' default legacy stream path."""
    return legacy_get(current_core(), request.environ, g.principal, "/messages")


@blueprint.route("/messages", methods=["POST"])
@blueprint.route("/messages/", methods=["POST"])
def messages_alias() -> Response:
    """The official SDKs' default legacy message path."""
    return handle_post(current_core(), request.environ, g.principal)

"""The HTTP routes: one path, `/mcp`, serving both transports, plus the SDKs' default paths.

How a request is told apart (see the README's endpoint table):
GET without Mcp-Session-Id is a legacy stream; POST with `?session_id=` is a legacy
message; everything else on /mcp is Streamable HTTP. POSTs are answered by
posts.py, which the WSGI hot path shares.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, g, request
from werkzeug.exceptions import MethodNotAllowed

from mcp_server.dispatcher import Dispatcher
from mcp_server.errors import INVALID_REQUEST
from mcp_server.hub import CapacityError, HubUnavailable
from mcp_server.session import SSE, STREAMABLE
from mcp_server.transports import legacy_sse, streamable_http
from mcp_server.transports.http_io import (
    handle_post,
    legacy_session_param,
    lookup_session,
    server_busy,
    store_unavailable,
)
from mcp_server.transports.http_responses import HttpProblem, problem_response
from mcp_server.web.security import screen_request

__all__ = ["blueprint", "current_core"]

blueprint = Blueprint("mcp", __name__)

HTTP_400_BAD_REQUEST = 400
HTTP_406_NOT_ACCEPTABLE = 406
HTTP_503_SERVICE_UNAVAILABLE = 503


def current_core() -> Dispatcher:
    """The Dispatcher of the app handling this request."""
    return current_app.extensions["mcp"].core


@blueprint.errorhandler(HubUnavailable)
def session_store_unavailable(_: HubUnavailable) -> Response:
    """Redis is unreachable: answer 503 at once on every path (open, resume, post, delete), never 500."""
    return problem_response(store_unavailable())


@blueprint.before_request
def check_request_source() -> None:
    """Refuse foreign origins and unexpected Host headers, then authenticate; sets g.principal."""
    g.principal = screen_request()


# routing
@blueprint.route("/mcp", methods=["GET", "POST", "DELETE"])
def mcp_endpoint() -> Response:
    """Serve /mcp for both transports."""
    if request.method == "GET":
        if streamable_http.SESSION_HEADER in request.headers:
            return streamable_get()
        return legacy_get("/mcp")
    if request.method == "POST":
        return handle_post(current_core(), request.environ, g.principal)
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
    return handle_post(current_core(), request.environ, g.principal)


def legacy_get(endpoint: str) -> Response:
    """Open a new legacy stream, or resume one named by ?session_id=."""
    core = current_core()
    session_id = legacy_session_param(request.args)
    resume = lookup_session(core, session_id, SSE, g.principal) if session_id is not None else None
    try:
        return legacy_sse.open_stream(core, request.script_root + endpoint, resume,
                               request.headers.get("Last-Event-ID"), g.principal)
    except CapacityError as full:
        raise server_busy(full) from None


def streamable_get() -> Response:
    """Open a session's standalone stream."""
    if not streamable_http.AcceptedTypes(request.headers.get("Accept")).sse:
        raise HttpProblem(HTTP_406_NOT_ACCEPTABLE, INVALID_REQUEST,
                          "Not Acceptable: the stream needs 'Accept: text/event-stream'")
    core = current_core()
    session = lookup_session(core, request.headers.get(streamable_http.SESSION_HEADER), STREAMABLE, g.principal)
    streamable_http.check_protocol_header(request.headers.get(streamable_http.VERSION_HEADER))
    return streamable_http.open_stream(core, session, request.headers.get("Last-Event-ID"))


def streamable_delete() -> Response:
    """End a Streamable HTTP session."""
    session_id = request.headers.get(streamable_http.SESSION_HEADER)
    if session_id is None:
        raise HttpProblem(HTTP_400_BAD_REQUEST, INVALID_REQUEST, "Missing Mcp-Session-Id header")
    core = current_core()
    return streamable_http.close_session(core, lookup_session(core, session_id, STREAMABLE, g.principal))

"""A refusal or failure on the MCP routes, rendered as its JSON-RPC error body: never HTML, a traceback or internal
detail. The hot path and Flask's error handlers (flask_hooks) render alike through render_failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from flask import Response
from werkzeug.exceptions import HTTPException

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.errors import INVALID_REQUEST, error_response
from flask_mcp_gevent.transports.http_io import (
    HttpProblem,
    json_response,
    problem_response,
    store_unavailable,
    unexpected_error_response,
)

__all__ = ["FAILURES", "HTTP_EXCEPTION_HINTS", "http_exception_response", "render_failure"]

# The exceptions render_failure turns into answers, most specific first (Flask gets one handler for each).
FAILURES = (HttpProblem, StoreUnavailable, HTTPException, Exception)
HTTP_EXCEPTION_HINTS: dict[int, str] = {
    HTTPStatus.NOT_FOUND: "Not found: the MCP endpoint is /mcp (or /sse and /messages)",
    HTTPStatus.METHOD_NOT_ALLOWED: "Method {method} is not allowed on {path}; it takes {allowed}",
}


def render_failure(exc: Exception, environ: Mapping[str, Any]) -> Response:
    """A refusal or failure as its JSON-RPC error body: never HTML, a traceback or internal detail."""
    if isinstance(exc, HttpProblem):
        return problem_response(exc)
    if isinstance(exc, StoreUnavailable):
        # Redis is unreachable: 503 at once on every path (open, resume, post, delete), never 500.
        return problem_response(store_unavailable())
    if isinstance(exc, HTTPException):
        return http_exception_response(exc, environ)
    return unexpected_error_response(environ)


def http_exception_response(exc: HTTPException, environ: Mapping[str, Any]) -> Response:
    """Werkzeug's errors (404, 405, ...) as JSON instead of HTML."""
    status = exc.code or HTTPStatus.INTERNAL_SERVER_ERROR
    hint = HTTP_EXCEPTION_HINTS.get(status)
    # HEAD and OPTIONS come with every route (and /mcp refuses HEAD): the hint names what a client would send.
    allowed = ", ".join(m for m in getattr(exc, "valid_methods", None) or () if m not in ("HEAD", "OPTIONS"))
    message = (hint.format(method=environ.get("REQUEST_METHOD"), path=environ.get("PATH_INFO"), allowed=allowed)
               if hint else exc.name)
    response = json_response(error_response(None, INVALID_REQUEST, message), status)
    if status == HTTPStatus.METHOD_NOT_ALLOWED:
        response.headers.update({name: value for name, value in exc.get_headers() if name.lower() == "allow"})
    return response

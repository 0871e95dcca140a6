"""HTTP responses: JSON bodies that end with a newline, errors as JSON-RPC error bodies, and the refusal log line."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from flask import Response

from mcp_server.encoding import dumps_line
from mcp_server.errors import INTERNAL_ERROR, error_response, new_correlation_id
from mcp_server.logs import loggable
from mcp_server.session import session_id_from

__all__ = ["JSON", "HttpProblem", "empty_response", "json_response", "log_refusal", "problem_response",
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

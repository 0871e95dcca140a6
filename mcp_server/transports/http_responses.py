"""HTTP responses: JSON bodies that end with a newline, and errors as JSON-RPC error bodies."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Response

from mcp_server.encoding import dumps_line
from mcp_server.errors import error_response

__all__ = ["HttpProblem", "empty_response", "json_response", "problem_response"]

JSON = "application/json"
SSE = "text/event-stream"


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
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

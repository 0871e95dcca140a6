"""HTTP errors that are not HttpProblems: the 500 for a bug, and the one log line each refusal gets."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Response

from mcp_server.errors import INTERNAL_ERROR, new_correlation_id
from mcp_server.logs import loggable
from mcp_server.transports.http_io import legacy_session_param, query_of
from mcp_server.transports.http_responses import json_response

__all__ = ["log_refusal", "unexpected_error_response"]

log = logging.getLogger("mcp.http")


def unexpected_error_response(environ: Mapping[str, Any]) -> Response:
    """Log the exception being handled with a correlation id; answer 500 naming only the id."""
    correlation_id = new_correlation_id()
    log.exception("unhandled error on %s %s (correlation id %s)", loggable(environ.get("REQUEST_METHOD")),
                  loggable(environ.get("PATH_INFO")), correlation_id)
    return json_response(
        {"jsonrpc": "2.0", "id": None,
         "error": {"code": INTERNAL_ERROR, "message": "Internal error", "data": {"correlationId": correlation_id}}},
        500,
    )


def log_refusal(environ: Mapping[str, Any], status: int) -> None:
    """Log an HTTP-level refusal (status 400 or more) on one line."""
    if status < 400:
        return
    session = environ.get("HTTP_MCP_SESSION_ID") or legacy_session_param(query_of(environ)) or "-"
    log.info("http method=%s path=%s session=%s status=%d", loggable(environ.get("REQUEST_METHOD")),
             loggable(environ.get("PATH_INFO")), loggable(session[:8]), status)

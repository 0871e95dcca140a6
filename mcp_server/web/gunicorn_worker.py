"""The gunicorn worker: gevent's, except that gunicorn's own refusals of malformed HTTP answer as JSON.

gunicorn answers a request it cannot parse (a bad request line, a too-long URI, too many or
too large headers, a broken chunked body) before the app sees it, with an HTML page and
none of the app's headers. This worker answers the same statuses with a JSON-RPC error
body and the security headers, and logs the refusal on one line through the `mcp` loggers.
"""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from ssl import SSLError
from typing import Any

from gunicorn import util
from gunicorn.http.errors import (
    ConfigurationProblem,
    ExpectationFailed,
    ForbiddenProxyRequest,
    InvalidResponseHeader,
    InvalidResponseHeaderName,
    LimitRequestHeaders,
    LimitRequestLine,
    ParseException,
    UnsupportedTransferCoding,
)
from gunicorn.workers.ggevent import GeventWorker

from mcp_server.errors import INTERNAL_ERROR, INVALID_REQUEST, error_response, new_correlation_id
from mcp_server.logs import loggable

__all__ = ["McpWorker", "error_page"]

log = logging.getLogger("mcp.http")
# How gunicorn decides a refusal's status, in its order; anything else a worker raises is a 500.
STATUS_BY_ERROR: tuple[tuple[tuple[type[BaseException], ...], int], ...] = (
    ((InvalidResponseHeader, InvalidResponseHeaderName, ConfigurationProblem), 500),
    ((LimitRequestLine,), 414),
    ((LimitRequestHeaders,), 431),
    ((ForbiddenProxyRequest, SSLError), 403),
    ((ExpectationFailed,), 417),
    ((UnsupportedTransferCoding,), 501),
    ((ParseException,), 400),
)


def status_for(exc: BaseException) -> int:
    """The HTTP status gunicorn gives this error."""
    for kinds, status in STATUS_BY_ERROR:
        if isinstance(exc, kinds):
            return status
    return 500


def explain(status: int, cfg: Any) -> str:
    """What was wrong, and how to fix it, for each status gunicorn answers itself."""
    if status == 414:
        return (f"URI Too Long: the request line is over {cfg.limit_request_line} bytes; "
                "MCP needs only the path and ?session_id=")
    if status == 431:
        return (f"Request Header Fields Too Large: send at most {cfg.limit_request_fields} headers "
                f"of at most {cfg.limit_request_field_size} bytes each")
    if status == 400:
        return "Bad Request: malformed HTTP (request line, headers or chunked body); send well-formed HTTP/1.1"
    if status == 501:
        return "Not Implemented: unsupported Transfer-Encoding; send the body with Content-Length or chunked"
    return HTTPStatus(status).phrase


def error_page(status: int, message: str, data: Any = None) -> bytes:
    """A whole HTTP/1.1 response: status line, security headers, a JSON-RPC error body; the connection closes."""
    # Imported here, in a worker: the master loads this class before forking, and Flask belongs in the workers.
    from mcp_server.web.response_headers import SECURITY_HEADERS_WITH_CACHE

    code = INTERNAL_ERROR if status >= HTTPStatus.INTERNAL_SERVER_ERROR else INVALID_REQUEST
    body = (json.dumps(error_response(None, code, message, data), separators=(",", ":")) + "\n").encode()
    head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "Connection: close", "Content-Type: application/json",
            f"Content-Length: {len(body)}", *(f"{name}: {value}" for name, value in SECURITY_HEADERS_WITH_CACHE)]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class McpWorker(GeventWorker):
    """gunicorn's gevent worker, answering malformed HTTP with JSON instead of an HTML page."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """Log the refusal on one line and answer it as JSON with the security headers."""
        status = status_for(exc)
        data = None
        if status >= 500:
            correlation_id = new_correlation_id()
            data = {"correlationId": correlation_id}
            log.error("error handling a request (correlation id %s)", correlation_id, exc_info=exc)
            message = "Internal error"
        else:
            log.info("http malformed request status=%d error=%s", status, loggable(str(exc)))
            message = explain(status, self.cfg)
        try:
            util.write_nonblock(client, error_page(status, message, data))
        except OSError:
            log.debug("could not send the %d answer: the client is gone", status)

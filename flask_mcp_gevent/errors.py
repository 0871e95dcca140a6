"""JSON-RPC and MCP error codes, `RpcError`, and the error bodies built from them.

A method handler raises `RpcError` (code, message, data) and jsonrpcserver turns it into the error response;
a transport that refuses a request before any handler runs builds the body with `error_response`. Other
layers raise their own exceptions (CapacityError, StoreUnavailable, HttpProblem, ...) and the layer above turns
each into one of these codes. Messages say what went wrong and how to fix it; `data` never carries exception
text, paths or versions.
"""

from __future__ import annotations

import secrets
from typing import Any

from jsonrpcserver.exceptions import JsonRpcError
from jsonrpcserver.sentinels import NODATA

__all__ = [
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "PERMISSION_DENIED",
    "REQUEST_TIMEOUT",
    "RESOURCE_NOT_FOUND",
    "SERVER_UNAVAILABLE",
    "STORE_RETRY_AFTER_S",
    "STORE_UNAVAILABLE_MESSAGE",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "RpcError",
    "error_response",
    "new_correlation_id",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
PERMISSION_DENIED = -32001
RESOURCE_NOT_FOUND = -32002
REQUEST_TIMEOUT = -32003
SERVER_UNAVAILABLE = -32004
# The session store (Redis) did not answer: -32004 with this message, and HTTP 503 with Retry-After where the
# answer still has a status of its own.
STORE_UNAVAILABLE_MESSAGE = "Session store unavailable; retry shortly"
STORE_RETRY_AFTER_S = 2
# Reserved by MCP 2026-07-28 (-32020..-32099 belong to the specification); used only on its stateless wire.
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022


class RpcError(JsonRpcError):
    """A JSON-RPC error raised by a handler; jsonrpcserver answers with it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        # jsonrpcserver leaves "data" out only for its NODATA sentinel; None would go out as "data": null.
        super().__init__(code, message, NODATA if data is None else data)

    def to_dict(self) -> dict[str, Any]:
        """Return the error object as it goes on the wire."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not NODATA:
            error["data"] = self.data
        return error


def error_response(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """Build a JSON-RPC error response object."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def new_correlation_id() -> str:
    """Return a short random id that ties a client-visible error to a log line."""
    return secrets.token_hex(6)

"""Classify an incoming body: request, notification, client response, batch, or invalid.

This replaces jsonrpcserver's per-request schema validation with cheaper checks
that also enforce MCP's rules: ids are strings or integers (never null, bool or
object), params are an object, and `_meta` is taken out before dispatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp_server.encoding import loads
from mcp_server.errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, error_response

__all__ = ["Body", "Message", "ParseFailure", "parse_body", "classify"]

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
INVALID = "invalid"


@dataclass
class Message:
    """One JSON-RPC message, classified; `error` is set when kind is invalid."""

    kind: str
    raw: Any
    id: Any = None
    method: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None

    def to_request(self) -> dict[str, Any]:
        """Return the request as jsonrpcserver should see it: params without _meta."""
        request: dict[str, Any] = {"jsonrpc": "2.0", "method": self.method, "params": self.params}
        if self.kind == REQUEST:
            request["id"] = self.id
        return request


@dataclass
class Body:
    """A parsed POST body: its messages and whether it was a batch."""

    messages: list[Message]
    is_batch: bool

    @property
    def requests(self) -> list[Message]:
        """The messages that expect an answer."""
        return [m for m in self.messages if m.kind == REQUEST]

    @property
    def invalid(self) -> list[Message]:
        """The messages that were rejected before dispatch."""
        return [m for m in self.messages if m.kind == INVALID]


class ParseFailure(ValueError):
    """The body is not JSON at all; carries the -32700 response."""

    def __init__(self, response: dict[str, Any]) -> None:
        super().__init__(response["error"]["message"])
        self.response = response


def is_valid_id(value: Any) -> bool:
    """MCP ids are strings or integers; null, booleans, floats and objects are not."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def invalid(raw: Any, message: str, request_id: Any = None, code: int = INVALID_REQUEST) -> Message:
    """Build an invalid Message carrying its error response."""
    return Message(kind=INVALID, raw=raw, id=request_id, error=error_response(request_id, code, message))


def classify(raw: Any) -> Message:
    """Classify one decoded JSON-RPC message."""
    if not isinstance(raw, dict):
        return invalid(raw, "Invalid Request: a JSON-RPC message must be a JSON object")
    readable_id = raw.get("id") if is_valid_id(raw.get("id")) else None
    if raw.get("jsonrpc") != "2.0":
        return invalid(raw, 'Invalid Request: "jsonrpc" must be exactly "2.0"', readable_id)
    if "method" not in raw:
        if ("result" in raw) != ("error" in raw) and is_valid_id(raw.get("id")):
            return Message(kind=RESPONSE, raw=raw, id=raw["id"])
        return invalid(raw, 'Invalid Request: missing "method" (or "id" with "result"/"error")', readable_id)
    method = raw["method"]
    if not isinstance(method, str) or not method:
        return invalid(raw, 'Invalid Request: "method" must be a non-empty string', readable_id)
    has_id = "id" in raw
    if has_id and not is_valid_id(raw["id"]):
        return invalid(raw, 'Invalid Request: "id" must be a string or an integer (MCP forbids null)')
    params = raw.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return invalid(raw, 'Invalid params: "params" must be an object', readable_id, INVALID_PARAMS)
    meta = params.get("_meta")
    if meta is not None:
        params = {k: v for k, v in params.items() if k != "_meta"}
    return Message(
        kind=REQUEST if has_id else NOTIFICATION,
        raw=raw,
        id=raw["id"] if has_id else None,
        method=method,
        params=params,
        meta=meta if isinstance(meta, dict) else {},
    )


def parse_body(data: bytes) -> Body:
    """Decode and classify a POST body; raises ParseFailure when it is not JSON."""
    try:
        decoded = loads(data)
    except ValueError:
        raise ParseFailure(
            error_response(None, PARSE_ERROR, "Parse error: the body is not valid JSON")
        ) from None
    if isinstance(decoded, list):
        if not decoded:
            return Body([invalid(decoded, "Invalid Request: an empty batch")], is_batch=False)
        return Body([classify(item) for item in decoded], is_batch=True)
    return Body([classify(decoded)], is_batch=False)

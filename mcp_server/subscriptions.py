"""subscriptions/listen on the 2026-07-28 wire (a stub until its implementation lands: -32601)."""

from __future__ import annotations

from typing import Any

from mcp_server.errors import METHOD_NOT_FOUND, RpcError
from mcp_server.protocol.request_context import RequestContext

__all__ = ["subscriptions_listen"]


def subscriptions_listen(ctx: RequestContext, **_: Any) -> Any:
    """Refuse listen until it is implemented: the method is reserved in the modern table."""
    raise RpcError(METHOD_NOT_FOUND, "Method not found: subscriptions/listen is not available yet")

"""Requests per principal on the MCP routes, with flask-limiter: Redis when MCP_REDIS_URL is set, else memory.

The key is the authenticated principal, or the client address when authentication
is off, so one client cannot starve the others. A breach answers 429 with
Retry-After and a JSON-RPC error body. When Redis is unreachable the limiter
falls back to per-worker memory rather than refusing every request.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

from flask import Flask, Response, current_app, g, request
from flask_limiter import Limiter, RateLimitExceeded

from mcp_server.errors import INVALID_REQUEST
from mcp_server.responses import json_response

__all__ = ["init_rate_limit", "rate_limit_key"]

log = logging.getLogger("mcp.http")
EXTENSION_KEY = "mcp_rate_limiter"
HTTP_429_TOO_MANY_REQUESTS = 429
MCP_BLUEPRINT = "mcp"


def rate_limit_key() -> str:
    """Count requests per principal (set by the security screen, which runs first), else per client address."""
    principal = g.get("principal")
    if principal is not None:
        return "principal:" + principal
    return "address:" + (request.remote_addr or "unknown")


def outside_mcp_routes() -> bool:
    """Health checks and metadata are not rate limited: only the MCP endpoints are."""
    return request.blueprint != MCP_BLUEPRINT


def init_rate_limit(app: Flask, settings: Any) -> Limiter | None:
    """Install the MCP_RATE_LIMIT limiter on app; None when no rate limit is set."""
    if not settings.rate_limit:
        return None
    options: dict[str, Any] = {}
    if settings.redis_url:
        options = {"socket_timeout": settings.redis_timeout_s, "socket_connect_timeout": settings.redis_timeout_s}
    limiter = Limiter(
        rate_limit_key,
        application_limits=[settings.rate_limit],
        application_limits_exempt_when=outside_mcp_routes,
        storage_uri=settings.redis_url or "memory://",
        storage_options=options,
        strategy="fixed-window",
        key_prefix="mcp-rate",
        headers_enabled=False,
        in_memory_fallback_enabled=bool(settings.redis_url),
        swallow_errors=True,
    )
    limiter.init_app(app)
    app.extensions[EXTENSION_KEY] = limiter
    app.register_error_handler(RateLimitExceeded, render_rate_limited)
    return limiter


def render_rate_limited(exc: RateLimitExceeded) -> Response:
    """429 with Retry-After (seconds until the window resets) and a JSON-RPC error body."""
    limiter: Limiter = current_app.extensions[EXTENSION_KEY]
    current = limiter.current_limit
    retry_after = 60
    if current is not None:
        # reset_at is whole seconds: never ask for more than one window, never for less than a second.
        retry_after = max(1, min(math.ceil(current.reset_at - time.time()), current.limit.get_expiry()))
    log.info("rate limit exceeded by %s", rate_limit_key())
    rate = current_app.extensions["mcp"].core.settings.rate_limit
    return json_response(
        {"jsonrpc": "2.0", "id": None,
         "error": {"code": INVALID_REQUEST,
                   "message": f"Too many requests: the limit is {rate} (MCP_RATE_LIMIT); retry in {retry_after} s",
                   "data": {"retryAfter": retry_after}}},
        HTTP_429_TOO_MANY_REQUESTS,
        {"Retry-After": str(retry_after)},
    )

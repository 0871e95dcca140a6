"""The headers every response gets: the security headers (pipeline's finish puts them on), and CORS headers only for
MCP_CORS_ORIGINS."""

from __future__ import annotations

import re
from collections.abc import Iterable

from flask import Response, current_app, request

from flask_mcp_gevent.stateless.metadata import MCP_METHOD, MCP_NAME, MCP_PARAM_PREFIX, PROTOCOL_VERSION_HEADER
from flask_mcp_gevent.web.mcp_app import server_of

__all__ = ["SECURITY_HEADERS", "SECURITY_HEADERS_WITH_CACHE", "add_cors_headers", "origin_allowed"]

# An API has nothing to render, frame or sniff: say so to every browser that looks.
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
}
# Every response gets these, plus Cache-Control: no-store unless the route set its own.
SECURITY_HEADERS_WITH_CACHE = (*SECURITY_HEADERS.items(), ("Cache-Control", "no-store"))
CORS_ALLOW_METHODS = "GET, POST, DELETE"
# Every header an MCP client sends, 2026-07-28's Mcp-Method and Mcp-Name included (its Mcp-Param-* headers, one per
# x-mcp-header argument, are named by each tool: a preflight gets those it asks for).
CORS_ALLOW_HEADERS = (f"Authorization, Content-Type, Accept, Mcp-Session-Id, {PROTOCOL_VERSION_HEADER}, Last-Event-ID, "
                      f"{MCP_METHOD}, {MCP_NAME}")
# An Mcp-Param-* header name (an RFC 9110 token), as a preflight's Access-Control-Request-Headers lists it.
PARAM_HEADER = re.compile(re.escape(MCP_PARAM_PREFIX) + r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", re.IGNORECASE)
CORS_EXPOSE_HEADERS = "Mcp-Session-Id, MCP-Protocol-Version, WWW-Authenticate, Retry-After"
CORS_MAX_AGE_S = "600"


def origin_allowed(origin: str, patterns: Iterable[str]) -> bool:
    """Match an Origin against patterns: exact, '*' for any, or 'scheme://host:*' for any port."""
    origin = origin.strip().lower().rstrip("/")
    for pattern in patterns:
        pattern = pattern.strip().lower().rstrip("/")
        if pattern == "*" or pattern == origin:
            return True
        if pattern.endswith(":*"):
            base = pattern[:-2]
            if origin == base or (origin.startswith(base + ":") and origin[len(base) + 1 :].isdigit()):
                return True
    return False


def allowed_headers(requested: str) -> str:
    """The headers a preflight may send: every MCP header, and the Mcp-Param-* ones among those it asks for."""
    params = [name.strip() for name in requested.split(",") if PARAM_HEADER.fullmatch(name.strip())]
    return ", ".join([CORS_ALLOW_HEADERS, *params])


def add_cors_headers(response: Response) -> Response:
    """Let the browser origins in MCP_CORS_ORIGINS, and only those, read responses."""
    settings = server_of(current_app).settings
    if not settings.cors_origins:
        return response
    response.vary.add("Origin")
    origin = request.headers.get("Origin")
    if not origin or not origin_allowed(origin, settings.cors_origins):
        return response
    response.headers["Access-Control-Allow-Origin"] = origin
    response.headers["Access-Control-Expose-Headers"] = CORS_EXPOSE_HEADERS
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        response.headers["Access-Control-Allow-Methods"] = CORS_ALLOW_METHODS
        response.headers["Access-Control-Allow-Headers"] = allowed_headers(
            request.headers.get("Access-Control-Request-Headers", ""))
        response.vary.add("Access-Control-Request-Headers")  # the Mcp-Param-* headers echoed are the request's
        response.headers["Access-Control-Max-Age"] = CORS_MAX_AGE_S
    return response

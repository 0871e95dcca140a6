"""The headers every response gets: the security headers (pipeline's finish puts them on), and CORS headers only for
MCP_CORS_ORIGINS."""

from __future__ import annotations

from collections.abc import Iterable

from flask import Response, current_app, request

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
CORS_ALLOW_HEADERS = "Authorization, Content-Type, Accept, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID"
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
        response.headers["Access-Control-Allow-Headers"] = CORS_ALLOW_HEADERS
        response.headers["Access-Control-Max-Age"] = CORS_MAX_AGE_S
    return response

"""Checks every HTTP request passes before it reaches a session: Origin and Host.

Browsers send Origin; a page on another site must not drive a local server
(DNS rebinding), so foreign origins get 403, and on a loopback listener a Host
that is not a loopback name gets 421.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mcp_server.errors import INVALID_REQUEST
from mcp_server.responses import HttpProblem

__all__ = ["check_host", "check_origin", "host_allowed", "origin_allowed"]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
HTTP_403_FORBIDDEN = 403
HTTP_421_MISDIRECTED_REQUEST = 421


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


def split_host(host: str) -> str:
    """Return the host name of a Host header, without port or IPv6 brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_allowed(host: str, allowed: Iterable[str], listener_is_loopback: bool) -> bool:
    """Check the Host header: against MCP_ALLOWED_HOSTS when set, else loopback names on loopback."""
    allowed = tuple(allowed)
    name = split_host(host or "")
    if allowed:
        return "*" in allowed or name in {split_host(a) for a in allowed} or host.strip().lower() in allowed
    if listener_is_loopback:
        return name in LOOPBACK_NAMES
    return True


def is_loopback_address(address: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost."""
    address = address.strip("[]").lower()
    return address in LOOPBACK_NAMES or address.startswith("127.")


def check_origin(headers: Mapping[str, str], settings) -> None:
    """Raise 403 when the request carries an Origin outside MCP_ALLOWED_ORIGINS."""
    origin = headers.get("Origin")
    if origin and not origin_allowed(origin, settings.allowed_origins):
        raise HttpProblem(
            HTTP_403_FORBIDDEN,
            INVALID_REQUEST,
            f"Origin {origin!r} is not allowed; add it to MCP_ALLOWED_ORIGINS to let that site connect",
        )


def check_host(environ: Mapping[str, str], settings) -> None:
    """Raise 421 when the Host header does not name this server (DNS rebinding defence)."""
    host = environ.get("HTTP_HOST", "")
    listener_is_loopback = is_loopback_address(environ.get("SERVER_NAME", ""))
    if not host_allowed(host, settings.allowed_hosts, listener_is_loopback):
        raise HttpProblem(
            HTTP_421_MISDIRECTED_REQUEST,
            INVALID_REQUEST,
            f"Host {host!r} is not allowed on this listener; set MCP_ALLOWED_HOSTS to the names clients use",
        )

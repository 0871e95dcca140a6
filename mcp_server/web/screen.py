"""The screen every request to the MCP routes passes first: Origin and Host checks, then authentication.

Foreign origins get 403, and on a loopback listener a Host that is not a loopback
name gets 421 (DNS rebinding); then the bearer token is checked (401 with
WWW-Authenticate, or 403 for a missing scope; 503 when tokens cannot be verified).
web/pipeline.py runs it for both ways in; the ops and console pages reuse the
Origin and Host checks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any

from mcp_server.auth import Authenticator, AuthUnavailable, InsufficientScope, Unauthenticated, metadata_url
from mcp_server.config import Settings, is_loopback_host
from mcp_server.errors import INVALID_REQUEST, PERMISSION_DENIED, SERVER_UNAVAILABLE, new_correlation_id
from mcp_server.transports.http_responses import HttpProblem

__all__ = ["check_host", "check_origin", "host_allowed", "origin_allowed", "screen_environ"]

log = logging.getLogger("mcp.auth")


# Origin and Host
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
        return is_loopback_host(name)
    return True


def check_origin(origin: str | None, settings: Settings) -> None:
    """Raise 403 when the request carries an Origin outside MCP_ALLOWED_ORIGINS (and MCP_CORS_ORIGINS)."""
    if origin and not origin_allowed(origin, (*settings.allowed_origins, *settings.cors_origins)):
        raise HttpProblem(
            HTTPStatus.FORBIDDEN,
            INVALID_REQUEST,
            f"Origin {origin!r} is not allowed; add it to MCP_ALLOWED_ORIGINS to let that site connect",
        )


def check_host(environ: Mapping[str, str], settings: Settings) -> None:
    """Raise 421 when the Host header does not name this server (DNS rebinding defence)."""
    host = environ.get("HTTP_HOST", "")
    listener_is_loopback = is_loopback_host(environ.get("SERVER_NAME", ""))
    if not host_allowed(host, settings.allowed_hosts, listener_is_loopback):
        raise HttpProblem(
            HTTPStatus.MISDIRECTED_REQUEST,
            INVALID_REQUEST,
            f"Host {host!r} is not allowed on this listener; set MCP_ALLOWED_HOSTS to the names clients use",
        )


# authentication
def challenge(settings: Settings, error: str | None = None, description: str = "", scope: str = "") -> str:
    """The WWW-Authenticate value: RFC 6750 Bearer, naming the resource metadata when OAuth is on."""
    params = []
    if settings.oauth_jwks_url:
        params.append(f'resource_metadata="{metadata_url(settings.oauth_audience)}"')
    else:
        params.append('realm="mcp"')
    # RFC 6750: a request that sent no credentials at all gets the bare challenge, without error details.
    if error:
        params.append(f'error="{error}"')
        if description:
            params.append('error_description="{}"'.format(description.replace('"', "'").replace("\\", "")))
    if scope:
        params.append(f'scope="{scope}"')
    return "Bearer " + ", ".join(params)


def authenticate(authenticator: Authenticator | None, settings: Settings, environ: Mapping[str, Any]) -> str | None:
    """Return the principal behind the request's bearer token (None when auth is off); 401/403/503 otherwise."""
    # A CORS preflight never carries credentials; it only asks which headers it may send.
    if authenticator is None or environ.get("REQUEST_METHOD") == "OPTIONS":
        return None
    try:
        return authenticator.authenticate(environ.get("HTTP_AUTHORIZATION")).name
    except Unauthenticated as refused:
        message = f"Unauthorized: {refused}"
        query = environ.get("QUERY_STRING", "")
        if refused.error is None and any(f"{name}=" in query for name in ("access_token", "token", "api_key")):
            message += " (credentials in the URL are ignored: they end up in logs)"
        raise HttpProblem(HTTPStatus.UNAUTHORIZED, INVALID_REQUEST, message,
                          headers={"WWW-Authenticate": challenge(settings, refused.error, str(refused))}) from None
    except InsufficientScope as refused:
        scope = " ".join(refused.scopes)
        raise HttpProblem(
            HTTPStatus.FORBIDDEN, PERMISSION_DENIED,
            f"Forbidden: {refused}; ask the authorization server for a token with scope '{scope}'",
            headers={"WWW-Authenticate": challenge(settings, "insufficient_scope", str(refused), scope)},
        ) from None
    except AuthUnavailable as unavailable:
        correlation_id = new_correlation_id()
        log.error("cannot verify tokens: %s (correlation id %s)", unavailable, correlation_id)
        raise HttpProblem(HTTPStatus.SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE,
                          "Cannot verify tokens right now; retry shortly",
                          data={"correlationId": correlation_id}, headers={"Retry-After": "5"}) from None


def screen_environ(environ: Mapping[str, Any], settings: Settings, authenticator: Authenticator | None) -> str | None:
    """Check Origin, Host and credentials; return the principal's name (None: auth off)."""
    origin = environ.get("HTTP_ORIGIN")
    if origin:
        check_origin(origin, settings)
    check_host(environ, settings)
    return authenticate(authenticator, settings, environ)

"""Who sent an MCP request over HTTP: MCP's own bearer credential (an API key, an OAuth token), or the host app's
principal_loader; and the host's own credentials that request carried.

The answer is a Principal made for this one request, with the grants of the credential that request presented,
and it travels with the request's calls (RequestContext.caller): nothing is looked up again by a principal's name.
A loader reads the host's own login (a session cookie, a token, a header) from the Flask request and answers None
(401, as an unknown API key gets) or an entry shaped like an API-keys entry, with every field given:
`{"principal": "alice", "tools": ["*"], "resources": [], "prompts": []}`. Its principal is named `app:alice`,
so it never shares sessions, tasks or grants with an API key's or a token's principal of the same name.
Only a loader's caller carries the host's credentials on to the host's routes made tools (web/route_tools.py):
its Authorization and Cookie headers and the ones the host named (MCP(app, forward_headers=[...])). MCP's own
credentials are never passed on: the host did not issue them.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any

from flask_mcp_gevent.auth import Authenticator, AuthUnavailable, InsufficientScope, Principal, Unauthenticated
from flask_mcp_gevent.auth.api_keys import principal_of_entry
from flask_mcp_gevent.auth.principal import LOADER, LOADER_PREFIX
from flask_mcp_gevent.config import ConfigError, Settings
from flask_mcp_gevent.errors import INVALID_REQUEST, PERMISSION_DENIED, SERVER_UNAVAILABLE, new_correlation_id
from flask_mcp_gevent.transports.http_io import HttpProblem
from flask_mcp_gevent.web.oauth_metadata import challenge

__all__ = ["CREDENTIAL_HEADERS", "authenticate", "credential_keys", "identify", "load_principal"]

log = logging.getLogger("mcp.auth")

# The headers a host's login reads in every app: passed on to its routes for a loader's caller.
CREDENTIAL_HEADERS = ("Authorization", "Cookie")
# An HTTP header name (RFC 9110 token), matched whole ("$" would also take a name ending in a newline).
HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}")
UNKNOWN_CALLER = "Unauthorized: this app does not know who you are; sign in as the app expects"
CREDENTIALS_IN_URL = ("access_token", "token", "api_key")
MALFORMED_OWN_KEY = ("Unauthorized: the {header} header holds one of this server's API keys, but not as "
                     "'Bearer <key>': send 'Authorization: Bearer <key>', and the key in no other header")


def credential_keys(forward_headers: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """(WSGI environ key, header name) of every header a loader's caller passes on; ConfigError for a bad name."""
    names: dict[str, str] = {}
    for name in (*CREDENTIAL_HEADERS, *forward_headers):
        if not isinstance(name, str) or not HEADER_NAME.fullmatch(name):
            raise ConfigError(f"MCP(forward_headers=...): {name!r} is not an HTTP header name")
        names.setdefault("HTTP_" + name.upper().replace("-", "_"), name)
    return tuple(names.items())


def authenticate(authenticator: Authenticator | None, settings: Settings, environ: Mapping[str, Any]
                 ) -> Principal | None:
    """The principal behind the request's bearer token (None when auth is off); 401/403/503 otherwise."""
    if authenticator is None:
        return None
    try:
        return authenticator.authenticate(environ.get("HTTP_AUTHORIZATION"))
    except Unauthenticated as refused:
        message = f"Unauthorized: {refused}"
        query = environ.get("QUERY_STRING", "")
        if refused.error is None and any(f"{name}=" in query for name in CREDENTIALS_IN_URL):
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


def identify(loader: Callable[[Any], Any], request: Any, settings: Settings, authenticator: Authenticator | None,
             forwarded: tuple[tuple[str, str], ...]) -> Principal:
    """MCP's own credential when the request carries one this server accepts, else the host loader's answer."""
    if authenticator is not None and request.environ.get("HTTP_AUTHORIZATION"):
        try:
            principal = authenticate(authenticator, settings, request.environ)
        except HttpProblem as refused:
            if refused.status != HTTPStatus.UNAUTHORIZED:
                raise  # a valid token without a scope every request needs, or tokens that cannot be checked now
        else:
            assert principal is not None
            return principal
    if authenticator is not None:
        refuse_own_keys(authenticator, request.environ, settings, forwarded)
    return load_principal(loader, request, settings, forwarded)


def refuse_own_keys(authenticator: Authenticator, environ: Mapping[str, Any], settings: Settings,
                    forwarded: tuple[tuple[str, str], ...]) -> None:
    """401 when a header a loader's caller passes on to the host's routes holds one of MCP's own API keys."""
    for key, name in forwarded:
        value = environ.get(key)
        if value and authenticator.holds_own_key(value):
            raise HttpProblem(HTTPStatus.UNAUTHORIZED, INVALID_REQUEST, MALFORMED_OWN_KEY.format(header=name),
                              headers={"WWW-Authenticate": challenge(settings, "invalid_request")})


def load_principal(loader: Callable[[Any], Any], request: Any, settings: Settings,
                   forwarded: tuple[tuple[str, str], ...]) -> Principal:
    """Ask the host's loader who sent request: its Principal, carrying the host's credentials (401 if nobody)."""
    entry = loader(request)
    if entry is None:
        raise HttpProblem(HTTPStatus.UNAUTHORIZED, INVALID_REQUEST, UNKNOWN_CALLER,
                          headers={"WWW-Authenticate": challenge(settings)})
    try:
        principal = principal_of_entry(entry, "the principal_loader's answer", LOADER, complete=True)
    except ConfigError as problem:
        # The host's code is wrong, not the caller: a 500, with the reason in the log only.
        log.error("%s", problem)
        raise RuntimeError(str(problem)) from None
    credentials = tuple((name, request.environ[key]) for key, name in forwarded if key in request.environ)
    size = sum(len(name) + len(value) for name, value in credentials)
    if size > settings.caller_credentials_max_bytes:
        raise HttpProblem(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, INVALID_REQUEST,
                          f"Credential headers of {size} bytes exceed the limit of "
                          f"{settings.caller_credentials_max_bytes} (MCP_CALLER_CREDENTIALS_MAX_BYTES)")
    return dataclasses.replace(principal, name=LOADER_PREFIX + principal.name, credentials=credentials)

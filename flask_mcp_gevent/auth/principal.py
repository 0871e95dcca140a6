"""Principal: who a request speaks for and what it may use, and the refusals authentication can end in.

A Principal is made for each request by the check that let it in (an API key, an OAuth token, a host app's
principal loader) and travels with that request's calls: what a call may use is what its own credential grants,
never what another request of the same name was granted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flask_mcp_gevent.auth.permissions import Grants

__all__ = ["AuthUnavailable", "InsufficientScope", "Principal", "Unauthenticated", "name_of"]

API_KEY = "api-key"
OAUTH = "oauth"
# A host app's principal_loader: its principals are named "app:<name>", so they never meet an API key's or a token's.
LOADER = "principal-loader"
# The prefixes that name where a principal came from; an API key's principal may not take one.
OAUTH_PREFIX = "oauth:"
LOADER_PREFIX = "app:"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: its name (what sessions and tasks are bound to) and what its credential grants."""

    name: str
    grants: Grants
    via: str
    scopes: tuple[str, ...] = field(default=())
    # The host's own credential headers the request carried (a principal loader's caller only): what a route made a
    # tool sends the host as this caller. MCP's own credentials (an API key, an OAuth token) are never kept here.
    credentials: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def allows(self, kind: str, name: str) -> bool:
        """Whether this caller may use the named tool, resource (URI or template) or prompt."""
        return self.grants.allows(kind, name)


def name_of(caller: Principal | None) -> str | None:
    """The name a caller's sessions and tasks are bound to (None: nobody checked, authentication off)."""
    return None if caller is None else caller.name


class Unauthenticated(Exception):
    """No credential, or one that does not prove who the caller is (HTTP 401).

    `error` is the RFC 6750 error code for WWW-Authenticate (None when no token
    was sent at all); the message says what to fix, never why a library failed.
    """

    def __init__(self, message: str, error: str | None = "invalid_token") -> None:
        super().__init__(message)
        self.error = error


class InsufficientScope(Exception):
    """A valid token that lacks a scope every request needs (HTTP 403)."""

    def __init__(self, message: str, scopes: tuple[str, ...]) -> None:
        super().__init__(message)
        self.scopes = scopes


class AuthUnavailable(Exception):
    """The keys that verify tokens cannot be fetched right now (HTTP 503)."""

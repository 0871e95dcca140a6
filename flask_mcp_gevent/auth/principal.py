"""Principal: who a request speaks for, and the refusals authentication can end in."""

from __future__ import annotations

from dataclasses import dataclass, field

from flask_mcp_gevent.auth.permissions import Grants

__all__ = ["AuthUnavailable", "InsufficientScope", "Principal", "Unauthenticated"]

API_KEY = "api-key"
OAUTH = "oauth"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: its name (what sessions are bound to) and what it may use."""

    name: str
    grants: Grants
    via: str
    scopes: tuple[str, ...] = field(default=())


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

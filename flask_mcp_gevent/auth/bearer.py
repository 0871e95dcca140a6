"""Authenticator: turn an Authorization header into a Principal, by API key or by OAuth token.

Tokens are read from the `Authorization: Bearer` header only, never from the query
string, and go nowhere else: this server calls no upstream API with them.
"""

from __future__ import annotations

import base64
import re
from typing import TYPE_CHECKING, Any

from flask_mcp_gevent.auth.api_keys import KEY_PREFIX, ApiKeyStore
from flask_mcp_gevent.auth.principal import Principal, Unauthenticated

if TYPE_CHECKING:
    from flask_mcp_gevent.auth.oauth import OAuthVerifier

__all__ = ["Authenticator", "bearer_token"]

# RFC 6750 b64token: what may follow "Bearer ".
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")
MAX_TOKEN_CHARS = 8192
# One of this server's API keys (new_key's form) anywhere in a header, and how many such a header is searched for.
OWN_KEY = re.compile(re.escape(KEY_PREFIX) + r"[A-Za-z0-9_-]{16,}")
MAX_OWN_KEYS_SOUGHT = 4


def bearer_token(header: str | None) -> str:
    """Return the token of an `Authorization: Bearer <token>` header; raise Unauthenticated otherwise."""
    if not header:
        raise Unauthenticated("authentication required: send 'Authorization: Bearer <token>'", error=None)
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer":
        raise Unauthenticated("only Bearer tokens are accepted: send 'Authorization: Bearer <token>'",
                              error="invalid_request")
    if not token or len(token) > MAX_TOKEN_CHARS or not TOKEN_PATTERN.fullmatch(token):
        raise Unauthenticated("the bearer token is malformed", error="invalid_request")
    return token


def basic_credentials(header: str) -> str:
    """The decoded `user:password` of an `Authorization: Basic` value; empty for anything else."""
    scheme, _, encoded = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return ""
    try:
        return base64.b64decode(encoded.strip(), validate=True).decode("utf-8", "replace")
    except ValueError:  # binascii.Error is a ValueError
        return ""


def looks_like_jwt(token: str) -> bool:
    """JWTs are three base64url parts joined by dots; API keys have no dots."""
    return token.count(".") == 2


class Authenticator:
    """Authenticates requests by API key, OAuth token, or both: each request's Principal carries its own grants."""

    def __init__(self, api_keys: ApiKeyStore | None, oauth: OAuthVerifier | None) -> None:
        self.api_keys = api_keys
        self.oauth = oauth

    @classmethod
    def from_settings(cls, settings: Any) -> Authenticator | None:
        """Build the authenticator the settings ask for; None when authentication is off."""
        if not settings.authentication_configured:
            return None
        api_keys = ApiKeyStore.load(settings.api_keys_file) if settings.api_keys_file else None
        oauth = None
        if settings.oauth_jwks_url:
            from flask_mcp_gevent.auth.oauth import OAuthVerifier  # PyJWT: the oauth extra, only when configured

            oauth = OAuthVerifier(settings)
        return cls(api_keys, oauth)

    def holds_own_key(self, value: str) -> bool:
        """Whether a header's value holds one of this server's API keys, as text ('Token mcp_...', a cookie) or in
        the base64 of Basic credentials (`curl -u "$KEY:"`)."""
        if self.api_keys is None:
            return False
        sought = [*OWN_KEY.findall(value)[:MAX_OWN_KEYS_SOUGHT], *OWN_KEY.findall(basic_credentials(value))[:1]]
        return any(self.api_keys.authenticate(key) is not None for key in sought)

    def authenticate(self, authorization: str | None) -> Principal:
        """Return the principal behind an Authorization header, or raise why there is none."""
        token = bearer_token(authorization)
        if self.api_keys is not None and not looks_like_jwt(token):
            principal = self.api_keys.authenticate(token)
            if principal is None:
                raise Unauthenticated("unknown API key")
            return principal
        if self.oauth is not None and looks_like_jwt(token):
            return self.oauth.verify(token)
        raise Unauthenticated("the bearer token is not a credential this server accepts")

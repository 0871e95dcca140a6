"""OAuth 2.1 resource server: validate JWT access tokens against the authorization server's JWKS.

A token is accepted when its signature verifies with a key of the JWKS (by `kid`),
its `iss` is MCP_OAUTH_ISSUER, its `aud` names this server's resource URL
(MCP_OAUTH_AUDIENCE), it has not expired, and it carries MCP_OAUTH_REQUIRED_SCOPES.
Its other scopes map to permissions (see permissions.grants_from_scopes). All
cryptography is PyJWT's; this module only chooses what to check. PyJWT is the oauth extra: this module is
imported only when MCP_OAUTH_JWKS_URL is set (auth/bearer.py), and Settings.check() refuses that setting without it.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jwt

from flask_mcp_gevent.auth.permissions import grants_from_scopes
from flask_mcp_gevent.auth.principal import OAUTH, AuthUnavailable, InsufficientScope, Principal, Unauthenticated

__all__ = ["OAuthVerifier"]

log = logging.getLogger("mcp.auth")

# Asymmetric algorithms only: a JWKS holds public keys, and HS* with a public key is the classic forgery.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
LEEWAY_S = 30  # clock skew tolerated between this server and the authorization server
JWKS_LIFESPAN_S = 300
JWKS_TIMEOUT_S = 5
# Fixed descriptions, so a client learns what to fix but never a library's wording.
REJECTIONS: tuple[tuple[type[Exception], str], ...] = (
    (jwt.ExpiredSignatureError, "the token has expired; get a new one from the authorization server"),
    (jwt.InvalidAudienceError, "the token was not issued for this server (audience mismatch)"),
    (jwt.InvalidIssuerError, "the token was not issued by the expected authorization server"),
    (jwt.ImmatureSignatureError, "the token is not valid yet"),
    (jwt.MissingRequiredClaimError, "the token lacks a required claim (exp, iss, aud or sub)"),
    (jwt.InvalidSignatureError, "the token's signature does not verify"),
)


class FileJwks:
    """A JWKS kept in a local file, re-read whenever the file changes (key rotation without a restart)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.stamp: tuple[int, int] | None = None
        self.keys: dict[str, jwt.PyJWK] = {}

    def signing_key(self, kid: str) -> jwt.PyJWK:
        """Return the key with this kid; raise PyJWKClientError if there is none."""
        self.reload_if_changed()
        key = self.keys.get(kid)
        if key is None:
            raise jwt.PyJWKClientError("no key with this kid")
        return key

    def reload_if_changed(self) -> None:
        """Parse the file again when its size or mtime changed."""
        try:
            status = os.stat(self.path)
        except OSError:
            raise AuthUnavailable("JWKS file unreadable") from None
        stamp = (status.st_mtime_ns, status.st_size)
        if stamp == self.stamp:
            return
        try:
            document = json.loads(Path(self.path).read_text(encoding="utf-8"))
            if not isinstance(document, dict):
                raise ValueError("a JWKS is a JSON object")
            key_set = jwt.PyJWKSet.from_dict(document)
        except (OSError, ValueError, jwt.PyJWTError):  # PyJWKError, and PyJWKSetError for a set without usable keys
            raise AuthUnavailable("JWKS file is not a usable key set") from None
        self.keys = {key.key_id: key for key in key_set.keys if key.key_id and key.public_key_use in ("sig", None)}
        self.stamp = stamp


class UrlJwks:
    """A JWKS fetched over HTTP(S) and cached by PyJWT's client (refetched on an unknown kid)."""

    def __init__(self, url: str) -> None:
        self.client = jwt.PyJWKClient(url, lifespan=JWKS_LIFESPAN_S, timeout=JWKS_TIMEOUT_S)

    def signing_key(self, kid: str) -> jwt.PyJWK:
        """Return the key with this kid; raise AuthUnavailable if the JWKS cannot be fetched or used."""
        try:
            return self.client.get_signing_key(kid)
        except jwt.PyJWKClientConnectionError:
            raise AuthUnavailable("JWKS endpoint unreachable") from None
        except (ValueError, jwt.PyJWKSetError):
            # Not JSON (a proxy's HTML page), or no usable key in it: the operator's to fix, as for a bad JWKS file.
            raise AuthUnavailable("JWKS endpoint answered with no usable key set") from None


def jwks_source(location: str) -> FileJwks | UrlJwks:
    """A JWKS from an http(s) URL, or from a local file (a path or a file:// URL)."""
    if location.startswith(("https://", "http://")):
        return UrlJwks(location)
    if location.startswith("file://"):
        location = urlsplit(location).path
    return FileJwks(location)


def token_scopes(claims: dict[str, Any]) -> tuple[str, ...]:
    """Scopes from `scope` (a space-separated string, RFC 9068) or `scp` (a list, as some servers send)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return tuple(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, list):
        return tuple(s for s in scp if isinstance(s, str))
    if isinstance(scp, str):
        return tuple(scp.split())
    return ()


class OAuthVerifier:
    """Checks JWT bearer tokens for this resource server."""

    def __init__(self, settings: Any) -> None:
        self.issuer = settings.oauth_issuer
        self.audience = settings.oauth_audience
        self.required_scopes = tuple(settings.oauth_required_scopes)
        self.jwks = jwks_source(settings.oauth_jwks_url)

    def verify(self, token: str) -> Principal:
        """Return the token's principal; raise Unauthenticated, InsufficientScope or AuthUnavailable."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise Unauthenticated("the bearer token is neither a known API key nor a well-formed JWT") from None
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise Unauthenticated("the token's header has no key id (kid)")
        try:
            key = self.jwks.signing_key(kid)
        except jwt.PyJWKClientError:
            raise Unauthenticated("the token was signed with a key this server does not know") from None
        if key.algorithm_name not in ALGORITHMS:
            raise Unauthenticated("the token's signing key uses an algorithm this server does not accept")
        try:
            claims = jwt.decode(
                token,
                key=key,
                algorithms=[key.algorithm_name],
                audience=self.audience,
                issuer=self.issuer,
                leeway=LEEWAY_S,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as rejected:
            log.info("token rejected: %s", type(rejected).__name__)
            raise Unauthenticated(self.describe(rejected)) from None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise Unauthenticated("the token's subject (sub) must be a non-empty string")
        scopes = token_scopes(claims)
        missing = [scope for scope in self.required_scopes if scope not in scopes]
        if missing:
            raise InsufficientScope(f"the token lacks the scope(s) {' '.join(missing)}", self.required_scopes)
        return Principal(name="oauth:" + subject, grants=grants_from_scopes(scopes), via=OAUTH, scopes=scopes)

    @staticmethod
    def describe(rejected: Exception) -> str:
        """A fixed, client-safe sentence for why a token was refused."""
        for kind, sentence in REJECTIONS:
            if isinstance(rejected, kind):
                return sentence
        return "the token is not valid"

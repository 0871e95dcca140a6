"""Authentication and authorization: API keys, OAuth 2.1 JWT bearer tokens, per-principal permissions.

Nothing here imports Flask: `flask_mcp_gevent.web.security` reads the request and turns the
refusals raised here into HTTP answers. OAuthVerifier is imported on first use: PyJWT is the oauth extra.
"""

from typing import TYPE_CHECKING, Any

from flask_mcp_gevent.auth.api_keys import ApiKeyStore, hash_key, new_key
from flask_mcp_gevent.auth.bearer import Authenticator, bearer_token
from flask_mcp_gevent.auth.permissions import Grants, grants_from_scopes
from flask_mcp_gevent.auth.principal import AuthUnavailable, InsufficientScope, Principal, Unauthenticated
from flask_mcp_gevent.auth.resource_metadata import metadata_document, metadata_url

if TYPE_CHECKING:
    from flask_mcp_gevent.auth.oauth import OAuthVerifier

__all__ = [
    "ApiKeyStore",
    "AuthUnavailable",
    "Authenticator",
    "Grants",
    "InsufficientScope",
    "OAuthVerifier",
    "Principal",
    "Unauthenticated",
    "bearer_token",
    "grants_from_scopes",
    "hash_key",
    "metadata_document",
    "metadata_url",
    "new_key",
]


def __getattr__(name: str) -> Any:
    """OAuthVerifier, imported when first asked for (with PyJWT, the oauth extra)."""
    if name == "OAuthVerifier":
        from flask_mcp_gevent.auth.oauth import OAuthVerifier

        return OAuthVerifier
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

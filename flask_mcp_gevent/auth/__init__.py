"""Authentication and authorization: API keys, OAuth 2.1 JWT bearer tokens, per-principal permissions.

Nothing here imports Flask: `flask_mcp_gevent.web.security` reads the request and turns the
refusals raised here into HTTP answers.
"""

from flask_mcp_gevent.auth.api_keys import ApiKeyStore, hash_key, new_key
from flask_mcp_gevent.auth.bearer import Authenticator, bearer_token
from flask_mcp_gevent.auth.oauth import OAuthVerifier, metadata_document, metadata_url
from flask_mcp_gevent.auth.permissions import Grants, grants_from_scopes
from flask_mcp_gevent.auth.principal import AuthUnavailable, InsufficientScope, Principal, Unauthenticated

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

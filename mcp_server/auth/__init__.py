"""Authentication and authorization: API keys, OAuth 2.1 JWT bearer tokens, per-principal permissions.

Nothing here imports Flask: `mcp_server.web.security` reads the request and turns the
refusals raised here into HTTP answers.
"""

from mcp_server.auth.api_keys import ApiKeyStore, hash_key, new_key
from mcp_server.auth.bearer import Authenticator, bearer_token
from mcp_server.auth.oauth import OAuthVerifier, metadata_document, metadata_url
from mcp_server.auth.permissions import Authorizer, Grants, grants_from_scopes
from mcp_server.auth.principal import AuthUnavailable, InsufficientScope, Principal, Unauthenticated

__all__ = [
    "ApiKeyStore",
    "AuthUnavailable",
    "Authenticator",
    "Authorizer",
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

"""RFC 9728 protected-resource metadata: where clients learn which authorization servers issue this server's tokens.

Plain data from the settings, with no JWT library: it is served beside the token checks of auth/oauth.py.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

__all__ = ["WELL_KNOWN", "metadata_document", "metadata_url"]

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_url(audience: str) -> str:
    """The RFC 9728 metadata URL of a resource: the well-known path inserted before the resource's path."""
    parts = urlsplit(audience)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN}{path}"


def metadata_document(settings: Any) -> dict[str, Any]:
    """The protected-resource metadata (RFC 9728) that names this server's authorization servers."""
    servers = list(settings.oauth_authorization_servers or (settings.oauth_issuer,))
    scopes = list(dict.fromkeys([*settings.oauth_required_scopes, "tools:*", "resources:*", "prompts:*"]))
    return {
        "resource": settings.oauth_audience,
        "authorization_servers": servers,
        "bearer_methods_supported": ["header"],
        "scopes_supported": scopes,
        "resource_name": settings.server_name,
    }

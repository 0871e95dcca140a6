"""Which era a message belongs to: the 2026-07-28 stateless wire (modern) or the handshake era (legacy).

HTTP decides per request; stdio decides per connection, from its first request (MCP 2026-07-28
basic/versioning.mdx, "Backward Compatibility with Initialization-Based Versions").
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from mcp_server.session import SUPPORTED as HANDSHAKE_VERSIONS
from mcp_server.stateless import headers, meta

__all__ = [
    "DISCOVER",
    "HANDSHAKE_VERSIONS",
    "MODERN_VERSIONS",
    "SUPPORTED_VERSIONS",
    "Era",
    "StdioEra",
    "http_era",
    "is_modern_version",
    "names_modern_version",
    "supported_versions",
]

MODERN_VERSIONS = ("2026-07-28",)
# One list for server/discover's supportedVersions and -32022's data.supported (the conformance suite wants the
# second to be a subset of the first). It names the handshake versions too, newest first: they are true, and a
# dual-era client whose modern versions we lack then falls back to initialize instead of giving up.
SUPPORTED_VERSIONS = MODERN_VERSIONS + tuple(reversed(HANDSHAKE_VERSIONS))
DISCOVER = "server/discover"


def supported_versions(legacy: bool) -> tuple[str, ...]:
    """The versions server/discover and -32022 name: the handshake ones only while the legacy wire is on."""
    return SUPPORTED_VERSIONS if legacy else MODERN_VERSIONS


class Era(enum.Enum):
    """The two ways a message is served."""

    LEGACY = "legacy"
    MODERN = "modern"


def is_modern_version(version: object) -> bool:
    """True for a version the stateless wire serves."""
    return isinstance(version, str) and version in MODERN_VERSIONS


def names_modern_version(value: object) -> bool:
    """True when a version header or _meta value is present and not a handshake version (unknown ones count)."""
    if value is None or value == "":
        return False
    return not (isinstance(value, str) and value in HANDSHAKE_VERSIONS)


def body_version(message: object) -> object:
    """Return params._meta's protocolVersion as sent, or None."""
    found = meta.request_meta(message)
    return found.get(meta.PROTOCOL_VERSION) if isinstance(found, dict) else None


def http_era(http_method: str, request_headers: Mapping[str, str], message: object) -> Era:
    """Decide one HTTP request's era: a POST naming a non-handshake version in its header (else body) is modern."""
    if http_method.upper() != "POST":
        return Era.LEGACY
    header = headers.get_header(request_headers, headers.PROTOCOL_VERSION)
    if header is not None and header.strip(headers.OWS) != "":
        return Era.MODERN if names_modern_version(header.strip(headers.OWS)) else Era.LEGACY
    return Era.MODERN if names_modern_version(body_version(message)) else Era.LEGACY


class StdioEra:
    """One stdio connection's era: unset until its first request (other than server/discover) decides it."""

    def __init__(self) -> None:
        """Start undecided."""
        self.era: Era | None = None

    def classify(self, message: object) -> Era:
        """Return the era to serve message in, fixing the connection's era on its first deciding request.

        server/discover is answered on the modern path in either era and decides nothing, so a dual-era
        client's probe never locks out a later initialize. Until a request decides, notifications and
        batches are legacy (only the handshake era has them before a request).
        """
        if isinstance(message, dict) and message.get("method") == DISCOVER and "id" in message:
            return Era.MODERN
        if self.era is not None:
            return self.era
        if not (isinstance(message, dict) and "method" in message and "id" in message):
            return Era.LEGACY
        self.era = Era.MODERN if names_modern_version(body_version(message)) else Era.LEGACY
        return self.era

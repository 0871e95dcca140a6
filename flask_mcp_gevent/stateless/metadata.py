"""What a 2026-07-28 request says about itself: its reserved `_meta` keys, its headers, and the versions it names.

The request-metadata headers may carry a value in the `=?base64?...?=` form. Which era a request belongs to is
decided from these in one place, flask_mcp_gevent/eras.py.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from flask_mcp_gevent.session import STATELESS, Session
from flask_mcp_gevent.session import SUPPORTED as HANDSHAKE_VERSIONS

__all__ = [
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "DISCOVER",
    "HANDSHAKE_VERSIONS",
    "LOG_LEVEL",
    "MCP_METHOD",
    "MCP_NAME",
    "MCP_PARAM_PREFIX",
    "STATELESS_VERSIONS",
    "PROTOCOL_VERSION",
    "PROTOCOL_VERSION_HEADER",
    "PROTOCOL_VERSION_KEY",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "SUPPORTED_VERSIONS",
    "InvalidHeaderValue",
    "decode_value",
    "encode_value",
    "ephemeral_session",
    "get_header",
    "is_stateless_version",
    "names_stateless_version",
    "plain_value",
    "request_meta",
    "supported_versions",
]


# The reserved _meta keys, spelled once
PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def request_meta(message: object) -> object:
    """Return a request's params._meta as sent (any JSON value), or None when there is none."""
    if not isinstance(message, dict):
        return None
    params = message.get("params")
    return params.get("_meta") if isinstance(params, dict) else None


def ephemeral_session(found: dict[str, Any], principal: str | None) -> Session:
    """Build the Session one 2026-07-28 request describes in its _meta; it is never stored.

    Without a logLevel the session's log_level stays None, which on this wire means no notifications/message.
    """
    level = found.get(LOG_LEVEL)
    capabilities = found.get(CLIENT_CAPABILITIES)
    info = found.get(CLIENT_INFO)
    return Session(transport=STATELESS, principal=principal, protocol_version=found.get(PROTOCOL_VERSION),
                   client_capabilities=capabilities if isinstance(capabilities, dict) else {},
                   client_info=info if isinstance(info, dict) else {}, initialized=True,
                   log_level=level if isinstance(level, str) else None)


# The request-metadata headers: names, lookup and the value form
PROTOCOL_VERSION_HEADER = "MCP-Protocol-Version"
# The same header as the WSGI environ names it: read in one place by every wire.
PROTOCOL_VERSION_KEY = "HTTP_MCP_PROTOCOL_VERSION"
MCP_METHOD = "Mcp-Method"
MCP_NAME = "Mcp-Name"
MCP_PARAM_PREFIX = "Mcp-Param-"
SENTINEL_PREFIX = "=?base64?"
SENTINEL_SUFFIX = "?="
# RFC 9110 field values: visible ASCII, space and tab. Anything else must travel Base64-encoded.
FIELD_VALUE = re.compile(r"[\x20-\x7e\t]*")
OWS = " \t"


class InvalidHeaderValue(ValueError):
    """A header value with characters a field value may not hold, or a broken Base64 sentinel."""


def get_header(headers: Mapping[str, str], name: str) -> str | None:
    """Look a header up case-insensitively (Werkzeug headers already are; plain dicts are not)."""
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    value = headers.get(wanted)
    if value is not None:
        return value  # the lower-case keys stateless.http.environ_headers makes, without a scan
    for key, found in headers.items():
        if key.lower() == wanted:
            return found
    return None


def plain_value(raw: str) -> str:
    """Return a header value with OWS trimmed; raise InvalidHeaderValue for characters outside RFC 9110's."""
    if not FIELD_VALUE.fullmatch(raw):
        raise InvalidHeaderValue("contains characters a header value may not carry")
    return raw.strip(OWS)  # RFC 9110 5.5: parsing excludes leading and trailing whitespace


def decode_value(raw: str) -> str:
    """Return a header value as the body would carry it: OWS trimmed, the Base64 sentinel form decoded.

    Raises InvalidHeaderValue for characters outside RFC 9110 field values, non-alphabet Base64, bad padding,
    or Base64 that is not UTF-8. A value missing either sentinel marker is a literal, as the spec says.
    """
    value = plain_value(raw)
    if not (value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX)
            and len(value) >= len(SENTINEL_PREFIX) + len(SENTINEL_SUFFIX)):
        return value
    encoded = value[len(SENTINEL_PREFIX):-len(SENTINEL_SUFFIX)]
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise InvalidHeaderValue("is not valid =?base64?...?= (standard alphabet, padded, UTF-8)") from None


def encode_value(value: str) -> str:
    """Encode a value for a header the way a client must (tests and a future client use this)."""
    safe = (FIELD_VALUE.fullmatch(value) and "\t" not in value and value == value.strip(OWS)
            and not (value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX)))
    if safe:
        return value
    return SENTINEL_PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + SENTINEL_SUFFIX


# The era
STATELESS_VERSIONS = ("2026-07-28",)
# One list for server/discover's supportedVersions and -32022's data.supported (the conformance suite wants the
# second to be a subset of the first). It names the handshake versions too, newest first: they are true, and a
# dual-era client whose stateless versions we lack then falls back to initialize instead of giving up.
SUPPORTED_VERSIONS = STATELESS_VERSIONS + tuple(reversed(HANDSHAKE_VERSIONS))
DISCOVER = "server/discover"


def supported_versions(legacy: bool) -> tuple[str, ...]:
    """The versions server/discover and -32022 name: the handshake ones only while the legacy wire is on."""
    return SUPPORTED_VERSIONS if legacy else STATELESS_VERSIONS


def is_stateless_version(version: object) -> bool:
    """True for a version the stateless wire serves."""
    return isinstance(version, str) and version in STATELESS_VERSIONS


def names_stateless_version(value: object) -> bool:
    """True when a version header or _meta value is present and not a handshake version (unknown ones count)."""
    if value is None or value == "":
        return False
    return not (isinstance(value, str) and value in HANDSHAKE_VERSIONS)


def body_version(message: object) -> object:
    """Return params._meta's protocolVersion as sent, or None."""
    found = request_meta(message)
    return found.get(PROTOCOL_VERSION) if isinstance(found, dict) else None

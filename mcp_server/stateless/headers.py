"""HTTP request-metadata headers of MCP 2026-07-28: names, lookup and the `=?base64?...?=` value form."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping

__all__ = [
    "MCP_METHOD",
    "MCP_NAME",
    "MCP_PARAM_PREFIX",
    "PROTOCOL_VERSION",
    "PROTOCOL_VERSION_KEY",
    "InvalidHeaderValue",
    "decode_value",
    "encode_value",
    "get_header",
    "plain_value",
]

PROTOCOL_VERSION = "MCP-Protocol-Version"
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
        return value  # the lower-case keys stateless_http.environ_headers makes, without a scan
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

"""The reserved `_meta` keys of MCP 2026-07-28, spelled once."""

from __future__ import annotations

__all__ = [
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "LOG_LEVEL",
    "PROTOCOL_VERSION",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "request_meta",
]

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

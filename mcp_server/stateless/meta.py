"""The reserved `_meta` keys of MCP 2026-07-28, spelled once."""

from __future__ import annotations

from typing import Any

from mcp_server.session import STATELESS, Session

__all__ = [
    "CLIENT_CAPABILITIES",
    "CLIENT_INFO",
    "LOG_LEVEL",
    "PROTOCOL_VERSION",
    "SERVER_INFO",
    "SUBSCRIPTION_ID",
    "ephemeral_session",
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

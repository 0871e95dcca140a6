"""The two protocol eras, and the one place a message's era is chosen, for HTTP and stdio alike.

The session era (2024-11-05 to 2025-11-25) opens a session with initialize and keeps it; MCP 2026-07-28 (the
stateless era) carries everything a request needs in its `_meta` and keeps nothing. Each era owns its method table,
the checks a request passes before dispatch, whether a tools/call takes one of its session's call slots, and the
shaping of its answers; `choose` says which era a message belongs to (MCP 2026-07-28 basic/versioning.mdx).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flask_mcp_gevent.errors import INVALID_PARAMS, INVALID_REQUEST, error_response
from flask_mcp_gevent.messages import Message
from flask_mcp_gevent.protocol.methods import SESSION_METHODS
from flask_mcp_gevent.protocol.request_context import LOG_LEVELS, SESSION_ERA, STATELESS_ERA
from flask_mcp_gevent.session import SUPPORTED as HANDSHAKE_VERSIONS
from flask_mcp_gevent.session import Session
from flask_mcp_gevent.stateless import metadata
from flask_mcp_gevent.stateless.methods import STATELESS_METHOD_NAMES, STATELESS_METHODS
from flask_mcp_gevent.stateless.results import dress_response
from flask_mcp_gevent.stateless.validation import Rejection, validate_request

__all__ = ["SESSION", "STATELESS", "Era", "StdioEra", "choose", "era_of"]

# Requests a session-era client may send before initialize has been answered.
ALLOWED_BEFORE_INIT = frozenset({"initialize", "ping"})


class Era:
    """One protocol era: its name (RequestContext.era), its method table and its rules around dispatch."""

    name = SESSION_ERA
    methods: dict[str, Callable[..., Any]] = SESSION_METHODS
    stateless = False

    def refusal(self, session: Session, message: Message) -> dict[str, Any] | None:
        """The error a request gets before dispatch, or None: the session era's handshake comes first."""
        if not session.negotiated and message.method not in ALLOWED_BEFORE_INIT:
            return error_response(message.id, INVALID_REQUEST,
                                  "Session not initialized: send initialize first, then this request")
        return None

    def takes_call_slot(self, session: Session, message: Message) -> bool:
        """Whether the request counts against its session's MCP_MAX_CONCURRENT_CALLS: a stored session's
        tools/call (stdio's one local client is not held back)."""
        return message.method == "tools/call" and session.stored

    def shape(self, message: Message, response: dict[str, Any], server_info: dict[str, Any],
              authenticated: bool) -> dict[str, Any]:
        """The response as this era sends it: the session era's, as jsonrpcserver made it."""
        return response


class StatelessEra(Era):
    """MCP 2026-07-28: no handshake and no session, so no call slots; results dressed with resultType and _meta."""

    name = STATELESS_ERA
    methods = STATELESS_METHODS
    stateless = True

    def refusal(self, session: Session, message: Message) -> dict[str, Any] | None:
        """A request's logLevel must name a level (a session-era client sets it with logging/setLevel instead)."""
        if session.log_level is not None and session.log_level not in LOG_LEVELS:
            return error_response(message.id, INVALID_PARAMS,
                                  f"Invalid params: _meta logLevel must be one of {', '.join(LOG_LEVELS)}")
        return None

    def takes_call_slot(self, session: Session, message: Message) -> bool:
        """Never: a stateless request has no session to count against."""
        return False

    def shape(self, message: Message, response: dict[str, Any], server_info: dict[str, Any],
              authenticated: bool) -> dict[str, Any]:
        """resultType, serverInfo and cache hints on a result; this wire's codes on an error (stateless/results.py)."""
        return dress_response(message, response, server_info, authenticated)

    def validate(self, message: Message, headers: Mapping[str, str] | None, supported: tuple[str, ...]
                 ) -> Rejection | None:
        """Every check the specification runs before dispatch, in its order; headers is None on stdio."""
        return validate_request(message.raw, headers, STATELESS_METHOD_NAMES, supported)


SESSION = Era()
STATELESS = StatelessEra()


def era_of(session: Session) -> Era:
    """The era a session belongs to (a 2026-07-28 request's ephemeral session, or a stored one)."""
    return STATELESS if session.stateless else SESSION


def choose(version_header: str | None, message: object, names_session: bool = False) -> Era:
    """The era of one request: the version its MCP-Protocol-Version header names (on HTTP), else its _meta's.

    A handshake version, or none, is the session era. A request that names a session stays in it unless it says
    2026-07-28 outright: a session's client sending a version this server has never heard of keeps the session
    era's answer (400, the versions it speaks).
    """
    header = (version_header or "").strip(" \t")
    if header in HANDSHAKE_VERSIONS:
        return SESSION
    body_version = metadata.body_version(message)
    if not metadata.names_stateless_version(header if header else body_version):
        return SESSION
    if names_session and not (metadata.is_stateless_version(header) or metadata.is_stateless_version(body_version)):
        return SESSION
    return STATELESS


class StdioEra:
    """One stdio connection's era: unset until its first request (other than server/discover) decides it."""

    def __init__(self) -> None:
        """Start undecided."""
        self.era: Era | None = None

    def classify(self, message: object) -> Era:
        """Return the era to serve message in, fixing the connection's era on its first deciding request.

        server/discover is answered the stateless way in either era and decides nothing, so a dual-era client's
        probe never locks out a later initialize. Until a request decides, notifications and batches belong to
        the session era (only it has them before a request).
        """
        if isinstance(message, dict) and message.get("method") == metadata.DISCOVER and "id" in message:
            return STATELESS
        if self.era is not None:
            return self.era
        if not (isinstance(message, dict) and "method" in message and "id" in message):
            return SESSION
        self.era = choose(None, message)
        return self.era

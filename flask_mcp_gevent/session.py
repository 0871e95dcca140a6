"""Session: what the server remembers about one client connection between messages, and the versions it may speak."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, NamedTuple
from urllib.parse import parse_qs

__all__ = ["LATEST", "SESSION_HEADER", "SESSION_HEADER_KEY", "SESSION_ID_MAX_CHARS", "SESSION_ID_PATTERN",
           "SESSION_ID_SYNTAX", "SUPPORTED", "Session", "SessionChange", "SessionUpdate", "allows_batches", "at_least",
           "negotiate", "new_session_id", "query_of", "session_id_from"]

SSE = "sse"
STREAMABLE = "streamable"
STDIO = "stdio"
# The 2026-07-28 wire: a Session built from one request's _meta, never stored in the store.
STATELESS = "stateless"


# Protocol versions of the session era: which we speak, how to negotiate, and what changed between them.
SUPPORTED = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = SUPPORTED[-1]


def negotiate(requested: object) -> str:
    """Echo a version we support, otherwise answer with the latest one."""
    return requested if isinstance(requested, str) and requested in SUPPORTED else LATEST


def at_least(version: str | None, floor: str) -> bool:
    """True when version is floor or newer (dates compare as strings)."""
    return version is not None and version >= floor


def allows_batches(version: str | None) -> bool:
    """JSON-RPC batches exist only in 2025-03-26: added then, removed in 2025-06-18."""
    return version == "2025-03-26"


# What new_session_id returns; an id of another shape is no session of ours, answered without asking the store.
SESSION_ID_PATTERN = re.compile(r"[0-9a-f]{32}")
# The longest id looked at: the specification sets no bound, and ours are 32 characters.
SESSION_ID_MAX_CHARS = 128
# What the specification allows in a session id (visible ASCII, 0x21 to 0x7E): anything else is malformed (400).
SESSION_ID_SYNTAX = re.compile(rf"[\x21-\x7e]{{1,{SESSION_ID_MAX_CHARS}}}")
# Streamable HTTP carries the id in this header; the legacy transport in ?session_id= (or ?sessionId=).
SESSION_HEADER = "Mcp-Session-Id"
SESSION_HEADER_KEY = "HTTP_MCP_SESSION_ID"


def new_session_id() -> str:
    """Return a fresh session id: 128 random bits as 32 hex characters (visible ASCII)."""
    return secrets.token_hex(16)


def query_of(environ: Mapping[str, Any]) -> dict[str, str]:
    """The query string's parameters, first value of each."""
    query = environ.get("QUERY_STRING", "")
    if not query:
        return {}
    return {name: values[0] for name, values in parse_qs(query, keep_blank_values=True).items()}


def session_id_from(environ: Mapping[str, Any], *, header: bool = True, query: bool = True) -> str | None:
    """The session id a request names: its Mcp-Session-Id header, else ?session_id= or ?sessionId=."""
    if header and SESSION_HEADER_KEY in environ:
        return environ[SESSION_HEADER_KEY]
    if not query:
        return None
    params = query_of(environ)
    return params.get("session_id", params.get("sessionId"))


# Slotted: the memory store keeps one per session for the session's whole life.
@dataclass(slots=True)
class Session:
    """One client's state; the store stores it and every worker can load it."""

    id: str = field(default_factory=new_session_id)
    transport: str = SSE
    principal: str | None = None
    protocol_version: str | None = None
    client_info: dict[str, Any] = field(default_factory=dict)
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    initialized: bool = False
    log_level: str | None = None
    subscriptions: list[str] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)

    @property
    def negotiated(self) -> bool:
        """True once initialize has been answered."""
        return self.protocol_version is not None

    @property
    def stateless(self) -> bool:
        """True for a 2026-07-28 request's ephemeral session: its era has no handshake and stores nothing."""
        return self.transport == STATELESS

    @property
    def stored(self) -> bool:
        """True for a session kept in the store (HTTP's); a 2026-07-28 request's, and stdio's one, live with it."""
        return self.transport not in (STATELESS, STDIO)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready copy for storage."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Session:
        """Rebuild a session from storage, ignoring fields it no longer has."""
        if data.keys() <= cls.__dataclass_fields__.keys():
            return cls(**data)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def copy(self) -> Session:
        """A copy to change freely: its subscriptions and client fields are its own (shallow copies)."""
        return replace(self, subscriptions=self.subscriptions.copy(), client_info=self.client_info.copy(),
                       client_capabilities=self.client_capabilities.copy())

    def take_fields(self, other: Session) -> None:
        """Copy every field of another copy of this session (keeps objects that share this one in step)."""
        for name in (f.name for f in fields(self)):
            setattr(self, name, getattr(other, name))


@dataclass(frozen=True)
class SessionChange:
    """A change to some fields of a stored session, which the store applies atomically (no lost updates).

    `assign` sets fields; `subscribe` adds a URI unless the session already holds `subscription_limit`;
    `unsubscribe` removes one; `unless_negotiated` refuses the whole change once initialize has been answered.
    """

    assign: Mapping[str, Any] = field(default_factory=dict)
    subscribe: str | None = None
    unsubscribe: str | None = None
    subscription_limit: int | None = None
    unless_negotiated: bool = False

    def apply(self, session: Session) -> bool:
        """Apply the change to a session in place; False (and nothing changed) when it is refused."""
        if self.unless_negotiated and session.negotiated:
            return False
        added = self.subscribe if self.subscribe not in session.subscriptions else None
        if added is not None and self.subscription_limit is not None:
            if len(session.subscriptions) >= self.subscription_limit:
                return False
        if added is not None:
            session.subscriptions.append(added)
        if self.unsubscribe in session.subscriptions:
            session.subscriptions.remove(self.unsubscribe)
        for name, value in self.assign.items():
            setattr(session, name, value)
        return True


class SessionUpdate(NamedTuple):
    """What a store's update_session did: whether the change was applied, and the session as stored now."""

    applied: bool
    # None when the session is gone (closed or expired).
    session: Session | None

"""Limits that keep one client from exhausting the server: sessions per owner, concurrent calls per session.

Everything here is Flask-free, so every transport can use it. The rate limit per
principal lives in `rate_limit` (it needs flask-limiter); the body's size, time and
shape limits in `transports.http_io`, where the body is read.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import TYPE_CHECKING, Any

from flask_mcp_gevent.conditions import CapacityError, QuotaFull, StoreUnavailable
from flask_mcp_gevent.errors import SERVER_UNAVAILABLE, STORE_UNAVAILABLE_MESSAGE, error_response
from flask_mcp_gevent.messages import Message

if TYPE_CHECKING:
    from flask_mcp_gevent.config import Settings
    from flask_mcp_gevent.session import Session
    from flask_mcp_gevent.store import SessionStore

__all__ = ["CallSlots", "SessionQuota", "SessionQuotaExceeded"]

log = logging.getLogger("mcp.limits")


class CallSlots:
    """Concurrent tools/call requests per session, at most MCP_MAX_CONCURRENT_CALLS: a slot's whole life.

    The store counts them: in this worker in memory, across the fleet with Redis (as leases that run out
    if the worker running the call dies). A slot is taken when the call starts and given back when
    it ends, however it ends.
    """

    def __init__(self, sessions: SessionStore, limit: int) -> None:
        self.sessions = sessions
        self.limit = limit

    def acquire(self, session_id: str) -> str | None:
        """Take a slot for one call; its token, or None when the session already runs its maximum."""
        return self.sessions.take_call_slot(session_id, self.limit)

    def claim(self, session: Session, message: Message) -> tuple[str | None, dict[str, Any] | None]:
        """A slot for one tools/call, or the -32004 error that refuses it: (token, None) or (None, error)."""
        try:
            token = self.acquire(session.id)
        except StoreUnavailable:
            return None, error_response(message.id, SERVER_UNAVAILABLE, STORE_UNAVAILABLE_MESSAGE)
        if token is None:
            return None, error_response(
                message.id, SERVER_UNAVAILABLE,
                f"Too many tool calls running in this session: the limit is {self.limit} "
                "(MCP_MAX_CONCURRENT_CALLS); wait for one to finish",
            )
        return token, None

    def release(self, session_id: str, token: str) -> None:
        """Give a slot back when the call ends, however it ends (free before its answer is written)."""
        self.sessions.give_back_call_slot(session_id, token)


class SessionQuotaExceeded(CapacityError):
    """A principal already holds MCP_MAX_SESSIONS_PER_PRINCIPAL sessions, or an address MCP_MAX_SESSIONS_PER_ADDRESS."""


def address_group(address: str) -> str:
    """What a client's sessions are counted under: its IPv4 address, or its IPv6 /64 (a host often has all of it)."""
    if ":" not in address:
        return address
    try:
        return str(ipaddress.ip_network(address + "/64", strict=False))
    except ValueError:
        return address


class SessionQuota:
    """Sessions per owner: an authenticated principal, or without authentication the client's address.

    The store counts each owner's sessions and checks the count as it stores a new one (in this worker
    in memory, across the fleet with Redis); closed and expired sessions free their places.
    """

    def __init__(self, sessions: SessionStore, settings: Settings) -> None:
        self.sessions = sessions
        self.settings = settings

    def owner_of(self, principal: str | None, address: str | None) -> tuple[str, int, str] | None:
        """The owner a new session counts against: (name, limit, setting), or None for no quota (stdio)."""
        if principal is not None:
            return "principal:" + principal, self.settings.max_sessions_per_principal, "MCP_MAX_SESSIONS_PER_PRINCIPAL"
        if address:
            return "address:" + address_group(address), self.settings.max_sessions_per_address, \
                "MCP_MAX_SESSIONS_PER_ADDRESS"
        return None

    def create(self, session: Session, address: str | None = None) -> None:
        """Store a new session, counted against its owner; SessionQuotaExceeded or CapacityError when full."""
        owner = self.owner_of(session.principal, address)
        if owner is None:
            self.sessions.create_session(session)
            return
        name, limit, setting = owner
        try:
            self.sessions.create_session(session, name, limit)
        except QuotaFull:
            holder = "you already hold" if session.principal is not None else "your address already holds"
            raise SessionQuotaExceeded(
                f"{holder} {limit} sessions ({setting}); end one with DELETE or let it expire"
            ) from None

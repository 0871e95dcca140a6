"""The Redis hub's session store: each session's JSON with an idle TTL, counted fleet-wide in one index."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcp_server.encoding import dumps
from mcp_server.hub.base import CapacityError, QuotaFull
from mcp_server.hub.redis_claims import Claims
from mcp_server.hub.redis_codec import (
    CLIENT_CHOSEN_FIELDS,
    DecodedSessions,
    client_chosen_json,
    milliseconds,
    session_json,
)
from mcp_server.hub.redis_keys import CONTROL_CHANNEL, SESSION_INDEX, owner_key, session_keys
from mcp_server.hub.redis_link import RedisLink
from mcp_server.session import Session, SessionChange, SessionUpdate

# get_session refreshes a session's TTL with a script at most this often per worker (a plain GET between),
# and never less often than a tenth of the TTL; the memory of when is bounded.
REFRESH_TTL_EVERY_S = 2.0
MAX_TTL_REFRESH_MEMORY = 100_000


class Sessions:
    """RedisHub's session store: it sends through the hub's link and ends a closed session's streams."""

    def __init__(self, link: RedisLink, settings: Any, claims: Claims, pending_ttl_s: float) -> None:
        self.link = link
        self.settings = settings
        self.claims = claims
        # A session's stored JSON decoded once and kept while it does not change (shared with the call slots).
        self.decoded = DecodedSessions()
        # When this worker last refreshed each session's TTL (bounded).
        self.ttl_refreshed: dict[str, float] = {}
        self.refresh_ttl_every_s = min(REFRESH_TTL_EVERY_S, settings.session_ttl_s / 10,
                                       settings.resume_window_s / 10 or REFRESH_TTL_EVERY_S)
        # How long a session that never came back after initialize lives (Hub.pending_ttl_s).
        self.pending_ttl_s = pending_ttl_s

    def create_session(self, session: Session, owner: str | None = None, owner_limit: int = 0) -> None:
        """Store a new session with the pending TTL; CapacityError at MCP_MAX_SESSIONS, QuotaFull for the owner.

        Both counts are of the whole fleet, checked and taken in one script; then the session is stored (its key
        is in its own hash slot). A failure between the two leaves a place taken for the pending TTL, no more.
        """
        ttl_ms = milliseconds(self.pending_ttl_s)
        script_keys = [SESSION_INDEX]
        args: list[Any] = [ttl_ms, self.settings.max_sessions, session.id]
        if owner is not None:
            script_keys.append(owner_key(owner))
            args.append(owner_limit)
        with self.link.guard:
            taken = self.link.run("create", script_keys, args)
            if taken == 1:
                self.link.execute("SET", session_keys(session.id)["session"], session_json(session), "PX", ttl_ms)
        if taken == -1:
            raise QuotaFull(owner)
        if not taken:
            raise CapacityError(f"this server holds its maximum of {self.settings.max_sessions} sessions")

    def get_session(self, session_id: str, accept: Callable[[Session], bool] | None = None) -> Session | None:
        """Load a session and refresh its idle TTL (at most every REFRESH_TTL_EVERY_S per worker).

        With accept, the session is read first without touching it, and refreshed only if accept takes it.
        """
        now = time.monotonic()
        # A session read moments ago has a fresh TTL: a plain GET (one Redis command, not a script) suffices.
        fresh = self.ttl_is_fresh(session_id, now)
        if fresh or accept is not None:
            session = self.peek_session(session_id)
            if session is None or (accept is not None and not accept(session)):
                return None
            if fresh:
                return session
        keys = session_keys(session_id)
        ttl_ms = milliseconds(self.settings.session_ttl_s)
        with self.link.guard:
            data = self.link.run("get", [keys["session"], keys["detached"], keys["replay"], keys["delivered"],
                                     keys["replay_sizes"], keys["replay_bytes"]], [ttl_ms])
            if data is not None:
                self.link.run("touch", [SESSION_INDEX], [ttl_ms, session_id])
        if data is None:
            self.ttl_refreshed.pop(session_id, None)
            return None
        if len(self.ttl_refreshed) >= MAX_TTL_REFRESH_MEMORY:
            self.ttl_refreshed.clear()
        self.ttl_refreshed[session_id] = now
        return self.decoded.decode(session_id, data)

    def ttl_is_fresh(self, session_id: str, now: float | None = None) -> bool:
        """True when this worker refreshed the session's TTL moments ago (a plain read suffices now)."""
        refreshed = self.ttl_refreshed.get(session_id)
        if refreshed is None:
            return False
        return (time.monotonic() if now is None else now) - refreshed < self.refresh_ttl_every_s

    def peek_session(self, session_id: str) -> Session | None:
        """Load a session without refreshing its idle TTL (quota checks)."""
        with self.link.guard:
            data = self.link.execute("GET", session_keys(session_id)["session"])
        return None if data is None else self.decoded.decode(session_id, data)

    def save_session(self, session: Session) -> None:
        """Store a changed session, keeping its TTL; a closed session stays closed."""
        with self.link.guard:
            self.link.execute("SET", session_keys(session.id)["session"], session_json(session), "XX", "KEEPTTL")

    def update_session(self, session_id: str, change: SessionChange) -> SessionUpdate:
        """Apply a change in one Lua script (read, change, write), keeping the session's TTL."""
        assign = {name: client_chosen_json(value) if name in CLIENT_CHOSEN_FIELDS else value
                  for name, value in change.assign.items()}
        limit = -1 if change.subscription_limit is None else change.subscription_limit
        with self.link.guard:
            reply = self.link.run(
                "update",
                [session_keys(session_id)["session"]],
                [dumps(assign), change.subscribe or "", change.unsubscribe or "", limit,
                 "1" if change.unless_negotiated else "0"],
            )
        if reply[0] == 0:
            return SessionUpdate(False, None)
        return SessionUpdate(reply[0] == 1, self.decoded.decode(session_id, reply[1]))

    def close_session(self, session_id: str) -> bool:
        """Delete the session's keys and end its streams on whichever workers hold them."""
        self.ttl_refreshed.pop(session_id, None)
        self.decoded.forget(session_id)
        self.claims.end_session(session_id, "session closed")
        keys = session_keys(session_id)
        with self.link.guard:
            existed = self.link.run(
                "close",
                [keys["session"], keys["replay"], keys["delivered"], keys["claim"], keys["detached"],
                 keys["replay_sizes"], keys["replay_bytes"]],
                [session_id, CONTROL_CHANNEL],
            )
            self.link.execute("ZREM", SESSION_INDEX, session_id)
        return bool(existed)

    def session_count(self) -> int:
        """How many sessions exist across every worker."""
        with self.link.guard:
            return int(self.link.run("count", [SESSION_INDEX], []))

"""The Redis hub's session store: each session's JSON with an idle TTL, counted fleet-wide in one index."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mcp_server.encoding import dumps
from mcp_server.hub.base import CapacityError, QuotaFull
from mcp_server.hub.redis_codec import (
    CLIENT_CHOSEN_FIELDS,
    client_chosen_json,
    milliseconds,
    session_json,
)
from mcp_server.hub.redis_keys import CONTROL_CHANNEL, SESSION_INDEX, owner_key, session_keys
from mcp_server.session import Session, SessionChange, SessionUpdate

# get_session refreshes a session's TTL with a script at most this often per worker (a plain GET between),
# and never less often than a tenth of the TTL; the memory of when is bounded.
REFRESH_TTL_EVERY_S = 2.0
MAX_TTL_REFRESH_MEMORY = 100_000


class Sessions:
    """RedisHub's session store (a mixin: it runs the hub's scripts through its connection)."""

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
        with self._redis():
            taken = self._run("create", script_keys, args)
            if taken == 1:
                self.client.set(session_keys(session.id)["session"], session_json(session), px=ttl_ms)
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
        with self._redis():
            data = self._run("get", [keys["session"], keys["detached"], keys["replay"], keys["delivered"],
                                     keys["replay_sizes"], keys["replay_bytes"]], [ttl_ms])
            if data is not None:
                self._run("touch", [SESSION_INDEX], [ttl_ms, session_id])
        if data is None:
            self._ttl_refreshed.pop(session_id, None)
            return None
        if len(self._ttl_refreshed) >= MAX_TTL_REFRESH_MEMORY:
            self._ttl_refreshed.clear()
        self._ttl_refreshed[session_id] = now
        return self._decoded.decode(session_id, data)

    def ttl_is_fresh(self, session_id: str, now: float | None = None) -> bool:
        """True when this worker refreshed the session's TTL moments ago (a plain read suffices now)."""
        refreshed = self._ttl_refreshed.get(session_id)
        if refreshed is None:
            return False
        return (time.monotonic() if now is None else now) - refreshed < self._refresh_ttl_every_s

    def peek_session(self, session_id: str) -> Session | None:
        """Load a session without refreshing its idle TTL (quota checks)."""
        with self._redis():
            data = self.command("GET", session_keys(session_id)["session"])
        return None if data is None else self._decoded.decode(session_id, data)

    def save_session(self, session: Session) -> None:
        """Store a changed session, keeping its TTL; a closed session stays closed."""
        with self._redis():
            self.client.set(session_keys(session.id)["session"], session_json(session), xx=True, keepttl=True)

    def update_session(self, session_id: str, change: SessionChange) -> SessionUpdate:
        """Apply a change in one Lua script (read, change, write), keeping the session's TTL."""
        assign = {name: client_chosen_json(value) if name in CLIENT_CHOSEN_FIELDS else value
                  for name, value in change.assign.items()}
        limit = -1 if change.subscription_limit is None else change.subscription_limit
        with self._redis():
            reply = self._run(
                "update",
                [session_keys(session_id)["session"]],
                [dumps(assign), change.subscribe or "", change.unsubscribe or "", limit,
                 "1" if change.unless_negotiated else "0"],
            )
        if reply[0] == 0:
            return SessionUpdate(False, None)
        return SessionUpdate(reply[0] == 1, self._decoded.decode(session_id, reply[1]))

    def close_session(self, session_id: str) -> bool:
        """Delete the session's keys and end its streams on whichever workers hold them."""
        self._ttl_refreshed.pop(session_id, None)
        self._decoded.forget(session_id)
        self._end_local(session_id, "session closed")
        keys = session_keys(session_id)
        with self._redis():
            existed = self._run(
                "close",
                [keys["session"], keys["replay"], keys["delivered"], keys["claim"], keys["detached"],
                 keys["replay_sizes"], keys["replay_bytes"]],
                [session_id, CONTROL_CHANNEL],
            )
            self.client.zrem(SESSION_INDEX, session_id)
        return bool(existed)

    def session_count(self) -> int:
        """How many sessions exist across every worker."""
        with self._redis():
            return int(self._run("count", [SESSION_INDEX], []))

"""The Redis store's sessions: each session's JSON with an idle TTL, counted fleet-wide in one index; and their
call slots: a session's running tool calls counted across the fleet, each slot a renewed lease."""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from typing import Any

from flask_mcp_gevent.conditions import CapacityError, QuotaFull, StoreUnavailable
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.session import Session, SessionChange, SessionUpdate
from flask_mcp_gevent.store.ports import SessionStore
from flask_mcp_gevent.store.redis_claims import Claims
from flask_mcp_gevent.store.redis_codec import (
    CLIENT_CHOSEN_FIELDS,
    milliseconds,
    session_from_json,
    session_json,
)
from flask_mcp_gevent.store.redis_keys import (
    CONTROL_CHANNEL,
    SESSION_INDEX,
    call_slots_key,
    owner_key,
    session_keys,
)
from flask_mcp_gevent.store.redis_link import RedisLink

# get_session refreshes a session's TTL with a script at most this often per worker (a plain GET between),
# and never less often than a tenth of the TTL; the memory of when is bounded.
REFRESH_TTL_EVERY_S = 2.0
MAX_TTL_REFRESH_MEMORY = 100_000
# How long a running tool call's slot is held without a renewal (the refresher renews it while the call runs),
# so the slots of a killed worker come back within this.
CALL_LEASE_S = 15.0
CALL_LEASE_MS = milliseconds(CALL_LEASE_S)
# Slot tokens are this worker's id and a number: unique in the fleet without asking the kernel for randomness.
_token_numbers = itertools.count()

log = logging.getLogger("mcp.store")


class RedisSessions(SessionStore):
    """The fleet's sessions and call slots: it sends through the store's link and ends a closed session's streams."""

    def __init__(self, link: RedisLink, settings: Any, claims: Claims) -> None:
        self.link = link
        self.settings = settings
        self.claims = claims
        # When this worker last refreshed each session's TTL (bounded).
        self.ttl_refreshed: dict[str, float] = {}
        self.refresh_ttl_every_s = min(REFRESH_TTL_EVERY_S, settings.session_ttl_s / 10,
                                       settings.resume_window_s / 10 or REFRESH_TTL_EVERY_S)
        # How long a session that never came back after initialize lives (never longer than the full TTL).
        self.pending_ttl_s = min(settings.pending_session_ttl_s, settings.session_ttl_s)
        self.reset()

    def reset(self) -> None:
        """No call slots held yet (after a fork too: the parent's are not this process's)."""
        # The call slots this worker holds, token -> session id, renewed while their calls run.
        self.call_leases: dict[str, str] = {}

    def create_session(self, session: Session, owner: str | None = None, owner_limit: int = 0) -> None:
        """Store a new session with the pending TTL; CapacityError at MCP_MAX_SESSIONS, QuotaFull for the owner."""
        ttl_ms = milliseconds(self.pending_ttl_s)
        script_keys = [SESSION_INDEX]
        args: list[Any] = [ttl_ms, self.settings.max_sessions, session.id]
        if owner is not None:
            script_keys.append(owner_key(owner))
            args.append(owner_limit)
        # The fleet-wide counts are taken in one script, then the session stored (its own hash slot): a failure
        # between the two leaves a place taken for the pending TTL, no more.
        taken = self.link.run("create", script_keys, args)
        if taken == 1:
            self.link.execute("SET", session_keys(session.id).session, session_json(session), "PX", ttl_ms)
        if taken == -1:
            raise QuotaFull(owner)
        if not taken:
            raise CapacityError(f"this server holds its maximum of {self.settings.max_sessions} sessions")

    def get_session(self, session_id: str, accept: Callable[[Session], bool] | None = None) -> Session | None:
        """Load a session and refresh its idle TTL (at most every REFRESH_TTL_EVERY_S per worker) if accept takes it."""
        now = time.monotonic()
        # A session read moments ago has a fresh TTL: a plain GET (one Redis command, not a script) suffices.
        refreshed = self.ttl_refreshed.get(session_id)
        fresh = refreshed is not None and now - refreshed < self.refresh_ttl_every_s
        if fresh or accept is not None:
            session = self.peek_session(session_id)
            if session is None or (accept is not None and not accept(session)):
                return None
            if fresh:
                return session
        ttl_ms = milliseconds(self.settings.session_ttl_s)
        data = self.link.run("get", session_keys(session_id), [ttl_ms])
        if data is None:
            self.ttl_refreshed.pop(session_id, None)
            return None
        self.link.run("touch", [SESSION_INDEX], [ttl_ms, session_id])
        if len(self.ttl_refreshed) >= MAX_TTL_REFRESH_MEMORY:
            self.ttl_refreshed.clear()
        self.ttl_refreshed[session_id] = now
        return session_from_json(data)

    def peek_session(self, session_id: str) -> Session | None:
        """Load a session without refreshing its idle TTL (quota checks)."""
        data = self.link.execute("GET", session_keys(session_id).session)
        return None if data is None else session_from_json(data)

    def update_session(self, session_id: str, change: SessionChange) -> SessionUpdate:
        """Apply a change in one Lua script (read, change, write), keeping the session's TTL."""
        assign = {name: dumps(value).decode() if name in CLIENT_CHOSEN_FIELDS else value
                  for name, value in change.assign.items()}
        limit = -1 if change.subscription_limit is None else change.subscription_limit
        reply = self.link.run(
            "update",
            [session_keys(session_id).session],
            [dumps(assign), change.subscribe or "", change.unsubscribe or "", limit,
             "1" if change.unless_negotiated else "0"],
        )
        if reply[0] == 0:
            return SessionUpdate(False, None)
        return SessionUpdate(reply[0] == 1, session_from_json(reply[1]))

    def close_session(self, session_id: str) -> bool:
        """Delete the session's keys and end its streams on whichever workers hold them."""
        self.ttl_refreshed.pop(session_id, None)
        self.claims.end_session(session_id, "session closed")
        existed = self.link.run("close", session_keys(session_id), [session_id, CONTROL_CHANNEL])
        self.link.execute("ZREM", SESSION_INDEX, session_id)
        return bool(existed)

    def session_count(self) -> int:
        """How many sessions exist across every worker."""
        return int(self.link.run("count", [SESSION_INDEX], []))

    # call slots
    def take_call_slot(self, session_id: str, limit: int) -> str | None:
        """Take a leased slot among the session's calls on every worker; None when limit are running."""
        self.link.connected()  # after a fork, worker_id names this process
        token = f"{self.link.worker_id}|{next(_token_numbers)}"
        taken = self.link.run("take_call_slot", [call_slots_key(session_id)],
                              [token, str(limit), str(CALL_LEASE_MS)])
        if not taken:
            return None
        self.call_leases[token] = session_id
        return token

    def give_back_call_slot(self, session_id: str, token: str) -> None:
        """Free the slot, Redis's reply awaited: free before the call's answer can be seen (or its lease runs out)."""
        self.call_leases.pop(token, None)
        try:
            self.link.execute("ZREM", call_slots_key(session_id), token)
        except StoreUnavailable:
            log.info("could not free a call slot of session %s: Redis unreachable", session_id[:8])

    def renew_call_leases(self) -> None:
        """Extend the lease of every call slot this worker holds (many in one round trip)."""
        self.link.run_each("renew_call_slot", [([call_slots_key(session_id)], [token, CALL_LEASE_MS])
                                               for token, session_id in list(self.call_leases.items())])

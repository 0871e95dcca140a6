"""The Redis hub's call slots: a session's running tool calls counted across the fleet, each slot a renewed lease."""

from __future__ import annotations

import functools
import itertools
import logging
from typing import Any, NamedTuple

import gevent

from mcp_server.encoding import dumps
from mcp_server.hub.base import ALL_SLOTS_TAKEN, HubUnavailable
from mcp_server.hub.redis_codec import milliseconds
from mcp_server.hub.redis_keys import call_slots_key, session_base
from mcp_server.hub.redis_link import RedisLink
from mcp_server.hub.redis_sessions import Sessions
from mcp_server.session import Session

log = logging.getLogger("mcp.hub")

# How long a running tool call's slot is held without a renewal (the refresher renews it while the call runs),
# so the slots of a killed worker come back within this.
CALL_LEASE_S = 15.0
CALL_LEASE_MS = milliseconds(CALL_LEASE_S)
# Leases renewed per round trip.
RENEW_BATCH = 500
# Releases left unwaited for (a stream that ended before its answer) kept before the written ones are dropped.
MAX_UNWRITTEN_RELEASES = 256
# Sessions whose slot lookup's keys and arguments this worker keeps (see _slot_lookups).
MAX_SLOT_LOOKUPS = 10_000
# Slot tokens are this worker's id and a number: unique in the fleet without asking the kernel for randomness.
_token_numbers = itertools.count()


@functools.lru_cache(maxsize=1024)
def owner_fields(transport: str, principal: str | None) -> tuple[str, str]:
    """The session JSON's transport and principal fields as session_json writes them (see the script)."""
    return '"transport":' + dumps(transport).decode(), '"principal":' + dumps(principal).decode()


def release_command(session_id: str, token: str) -> tuple[str, str, str]:
    """The command that frees a slot."""
    return "ZREM", call_slots_key(session_id), token


def session_of(release: tuple[Any, ...]) -> str:
    """The start of the session id a release command names (for a log line)."""
    return str(release[1]).partition("{")[2].partition("}")[0][:8]


class SlotLookup(NamedTuple):
    """A session's slot lookup, made once: its keys and the arguments after the token."""

    keys: list[str]
    fixed: list[str]


class CallSlots:
    """RedisHub's call slots: it sends through the hub's link and reads sessions as the session store decodes them."""

    def __init__(self, link: RedisLink, sessions: Sessions) -> None:
        self.link = link
        self.sessions = sessions
        self.reset()

    def reset(self) -> None:
        """No slots held yet (after a fork too: the parent's are not this process's)."""
        # The call slots this worker holds, token -> session id, renewed while their calls run.
        self.call_leases: dict[str, str] = {}
        # answer_waits releases not waited for yet: greenlet -> the post's number.
        self.unwritten_releases: dict[gevent.Greenlet, int] = {}
        self._prune_releases_at = MAX_UNWRITTEN_RELEASES
        # The slot lookup's keys and fixed arguments of each (session, transport, principal, limit) seen lately
        # (bounded, forgotten all at once when full).
        self._slot_lookups: dict[tuple[str, str, str | None, int], SlotLookup] = {}

    def take_call_slot(self, session_id: str, limit: int) -> str | None:
        """Take a leased slot among the session's calls on every worker; None when limit are running."""
        token = self.new_token()
        with self.link.guard:
            taken = self.link.run("take_call_slot", [call_slots_key(session_id)],
                                  [token, str(limit), str(CALL_LEASE_MS)])
        if not taken:
            return None
        self.call_leases[token] = session_id
        return token

    def get_session_for_call(self, session_id: str, transport: str, principal: str | None,
                             limit: int) -> tuple[Session | None, str | None]:
        """Load a session and take its call's slot in one round trip (its TTL must need no refresh: see the hub).

        The slot's lease starts when hold_call_slot says the call runs: a request that never does (cancelled
        before its greenlet started) leaves a slot that comes back within CALL_LEASE_S.
        """
        token = self.new_token()  # which makes the command path too
        lookup = (self._slot_lookups.get((session_id, transport, principal, limit))
                  or self.slot_lookup(session_id, transport, principal, limit))
        with self.link.guard:
            reply = self.link.run("get_taking_call_slot", lookup.keys, [token, *lookup.fixed])
        if reply is None:
            return None, None
        data, taken = reply
        session = self.sessions.decoded.decode(session_id, data)
        if taken < 0 or session.transport != transport or session.principal != principal:
            return None, None
        return session, token if taken else ALL_SLOTS_TAKEN

    def slot_lookup(self, session_id: str, transport: str, principal: str | None, limit: int) -> SlotLookup:
        """The slot lookup's keys and its arguments after the token (made once per session and shape, kept)."""
        keys = [session_base(session_id), call_slots_key(session_id)]
        fixed = [str(limit), str(CALL_LEASE_MS), transport, principal or "", "0" if principal is None else "1",
                 *owner_fields(transport, principal)]
        if len(self._slot_lookups) >= MAX_SLOT_LOOKUPS:
            self._slot_lookups.clear()
        lookup = self._slot_lookups[session_id, transport, principal, limit] = SlotLookup(keys, fixed)
        return lookup

    def hold_call_slot(self, session_id: str, token: str) -> None:
        """Renew the slot's lease while its call runs, as for one take_call_slot took."""
        self.call_leases[token] = session_id

    def new_token(self) -> str:
        """A token no other slot in the fleet has (after a fork, worker_id names this process)."""
        self.link.path()
        return f"{self.link.worker_id}|{next(_token_numbers)}"

    def give_back_call_slot(self, session_id: str, token: str, answer_follows: bool = False,
                            answer_waits: bool = False) -> None:
        """Free the slot; if Redis cannot be reached, its lease runs out instead (see Hub.give_back_call_slot).

        With answer_follows, the ZREM goes ahead of the answer this greenlet stores next (in the same write where
        the path allows); with answer_waits, it is queued for the next write and the answer's writer waits for it
        (wait_for_release), not this greenlet.
        """
        self.call_leases.pop(token, None)
        release = release_command(session_id, token)
        if answer_follows:
            self.link.send_ahead(release)
        else:
            self._free(release, answer_waits)

    def _free(self, release: tuple[Any, ...], answer_waits: bool = False) -> None:
        """Post a slot's release (queued for the answer's writer with answer_waits); unreachable, its lease runs out."""
        try:
            with self.link.guard:
                if answer_waits:
                    self._post_release(release)
                else:
                    self.link.post(*release)
        except HubUnavailable:
            log.info("could not free a call slot of session %s: Redis unreachable", session_of(release))

    def _post_release(self, release: tuple[Any, ...]) -> None:
        """Queue a slot's release without waiting; until it is written, wait_for_release(this greenlet) waits."""
        unwritten = self.unwritten_releases
        if len(unwritten) >= self._prune_releases_at:  # answers that never waited: forget the releases written since
            for greenlet, number in list(unwritten.items()):
                if self.link.written(number):
                    del unwritten[greenlet]
            # Many releases of one turn are all unwritten yet: scan again only once their number doubled, so a
            # turn with thousands of calls ending does not scan them all for each one.
            self._prune_releases_at = max(MAX_UNWRITTEN_RELEASES, 2 * len(unwritten))
        unwritten[gevent.getcurrent()] = self.link.post_nowait(*release)

    def wait_for_release(self, greenlet: Any) -> None:
        """Before a call's answer is written: wait until the release its greenlet queued is written (or failed)."""
        if self.unwritten_releases:
            number = self.unwritten_releases.pop(greenlet, None)
            if number is not None:
                self.link.wait_written(number)

    def free_held_slot(self) -> None:
        """Free the slot this greenlet gave back with answer_follows if no command carried its release."""
        release = self.link.take_ahead() if self.link.ahead else None
        if release is not None:
            self._free(release)

    def renew_call_leases(self) -> None:
        """Extend the lease of every call slot this worker holds, in one round trip per batch."""
        leases = list(self.call_leases.items())
        for start in range(0, len(leases), RENEW_BATCH):
            with self.link.guard:
                scripts = self.link.script_batch()
                for token, session_id in leases[start:start + RENEW_BATCH]:
                    scripts.add("renew_call_slot", [call_slots_key(session_id)], [token, str(CALL_LEASE_MS)])
                scripts.execute()

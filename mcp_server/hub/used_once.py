"""Ids used once, remembered in this process until they expire: the memory hub's record of consumed requests.

Bounded in count (MCP_REQUEST_STATE_USED_MAX) and so in bytes: every entry is one 16-byte id and one expiry time.
Full of ids still remembered, it refuses a new one (CapacityError) rather than forget one early, since a forgotten
id could be used again.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from mcp_server.hub.base import CapacityError

__all__ = ["UsedOnce"]


class UsedOnce:
    """A bounded map of used ids to the time each is forgotten, oldest first."""

    def __init__(self, max_ids: int, clock: Callable[[], float] = time.monotonic) -> None:
        """Hold at most max_ids at once; clock is injectable so tests can step time."""
        self.max_ids = max_ids
        self.clock = clock
        # Oldest first: with one lifetime for all (the state's), the first entry is also the first to expire.
        self.expiries: OrderedDict[bytes, float] = OrderedDict()

    def use(self, used_id: bytes, ttl_s: float) -> bool:
        """Record an id as used for ttl_s seconds: True the first time, False while it is remembered.

        gevent never switches inside this method, so two greenlets cannot both see an id as new.
        """
        if self.holds(used_id):
            return False
        if len(self.expiries) >= self.max_ids:
            raise CapacityError(f"this worker remembers its maximum of {self.max_ids} consumed requests "
                                "(MCP_REQUEST_STATE_USED_MAX) until they expire")
        self.expiries[used_id] = self.clock() + ttl_s
        self.expiries.move_to_end(used_id)  # an expired entry left behind a longer-lived one is renewed at the end
        return True

    def holds(self, used_id: bytes) -> bool:
        """Whether the id is remembered: by its own expiry, as an entry of a shorter lifetime may sit behind."""
        now = self.clock()
        self.forget_expired(now)
        expiry = self.expiries.get(used_id)
        return expiry is not None and expiry > now

    def forget_expired(self, now: float) -> None:
        """Drop the ids whose time is over, oldest first, up to the first one still remembered."""
        while self.expiries:
            used_id, expiry = next(iter(self.expiries.items()))
            if expiry > now:
                return
            del self.expiries[used_id]

    def __len__(self) -> int:
        """How many ids are remembered."""
        return len(self.expiries)

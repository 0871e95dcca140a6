"""The Redis hub's record of consumed multi-round requests: one key per request id, set once with NX, then expired."""

from __future__ import annotations

from mcp_server.hub.redis_codec import milliseconds
from mcp_server.hub.redis_keys import used_rounds_key

__all__ = ["UsedRounds"]


class UsedRounds:
    """RedisHub's use_once and is_used (a mixin: it sends through the hub's connection and outage guard)."""

    def use_once(self, rounds_id: bytes, ttl_s: float) -> bool:
        """SET the id's key NX PX ttl: only the first of any number of workers and hosts gets OK."""
        with self._redis():  # type: ignore[attr-defined]
            reply = self.command("SET", used_rounds_key(rounds_id), "1", "NX", "PX",  # type: ignore[attr-defined]
                                 milliseconds(ttl_s))
        return reply is not None

    def is_used(self, rounds_id: bytes) -> bool:
        """Whether the id's key exists (Redis drops it when its time is over)."""
        with self._redis():  # type: ignore[attr-defined]
            return bool(self.command("EXISTS", used_rounds_key(rounds_id)))  # type: ignore[attr-defined]

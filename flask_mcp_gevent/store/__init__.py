"""Where sessions and their messages live: three ports (ports.py), two backends (memory.py, redis.py).

A store is its sessions (with their call slots), its event log and its fleet bus; `create_store` picks the backend
the settings ask for. The tasks extension keeps its tasks beside it (flask_mcp_gevent/tasks/store.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from flask_mcp_gevent.store.ports import EventLog, FleetBus, FleetWorker, SessionStore

__all__ = ["EventLog", "FleetBus", "FleetWorker", "SessionStore", "Store", "create_store"]


class Store(Protocol):
    """One backend's three ports."""

    @property
    def sessions(self) -> SessionStore:
        """Its sessions and their call slots."""

    @property
    def events(self) -> EventLog:
        """Its event log."""

    @property
    def fleet(self) -> FleetBus:
        """Its fleet bus."""

    def stop(self) -> None:
        """Stop the store's greenlets and close its connections (tests; a worker simply exits)."""


def create_store(settings: Any) -> Store:
    """The Redis store when MCP_REDIS_URL (or MCP_REDIS_SENTINELS) is set, else the in-memory store."""
    if settings.uses_redis:
        # Imported only here: redis and hiredis are the redis extra, which Settings.check() made sure of.
        from flask_mcp_gevent.store.redis import RedisStore

        return RedisStore(settings)
    from flask_mcp_gevent.store.memory import MemoryStore

    return MemoryStore(settings)

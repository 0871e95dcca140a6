"""How messages reach a stream: one interface (`Store`), two backends (memory, redis)."""

from __future__ import annotations

from typing import Any

from flask_mcp_gevent.store.base import CapacityError, QuotaFull, Store, StoreUnavailable, StreamConflict
from flask_mcp_gevent.store.subscription import StreamClosed, Subscription

__all__ = ["CapacityError", "Store", "StoreUnavailable", "QuotaFull", "StreamClosed", "StreamConflict", "Subscription",
           "create_store"]


def create_store(settings: Any) -> Store:
    """Return the Redis hub when MCP_REDIS_URL (or MCP_REDIS_SENTINELS) is set, else the in-memory hub."""
    if settings.uses_redis:
        # Imported only here: redis and hiredis are the redis extra, which Settings.check() made sure of.
        from flask_mcp_gevent.store.redis import RedisStore

        return RedisStore(settings)
    from flask_mcp_gevent.store.memory import MemoryStore

    return MemoryStore(settings)

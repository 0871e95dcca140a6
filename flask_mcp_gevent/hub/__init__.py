"""How messages reach a stream: one interface (`Hub`), two backends (memory, redis)."""

from __future__ import annotations

from typing import Any

from flask_mcp_gevent.hub.base import CapacityError, Hub, HubUnavailable, QuotaFull, StreamConflict
from flask_mcp_gevent.hub.subscription import StreamClosed, Subscription

__all__ = ["CapacityError", "Hub", "HubUnavailable", "QuotaFull", "StreamClosed", "StreamConflict", "Subscription",
           "create_hub"]


def create_hub(settings: Any) -> Hub:
    """Return the Redis hub when MCP_REDIS_URL (or MCP_REDIS_SENTINELS) is set, else the in-memory hub."""
    if settings.uses_redis:
        # Imported only here: redis and hiredis are the redis extra, which Settings.check() made sure of.
        from flask_mcp_gevent.hub.redis import RedisHub

        return RedisHub(settings)
    from flask_mcp_gevent.hub.memory import MemoryHub

    return MemoryHub(settings)

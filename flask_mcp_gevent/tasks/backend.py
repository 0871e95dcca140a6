"""Which task store goes beside a store: in Redis beside the Redis store (any worker reads a task), else in memory."""

from __future__ import annotations

from typing import Any

from flask_mcp_gevent.tasks.store import MemoryTaskStore, TaskStore

__all__ = ["task_store_for"]


def task_store_for(store: Any, settings: Any) -> TaskStore:
    """The task store beside store, bounded by the settings."""
    link = getattr(store, "link", None)
    if link is not None:
        from flask_mcp_gevent.tasks.redis_store import RedisTaskStore  # redis is the redis extra

        return RedisTaskStore(link, int(settings.task_max_ttl_s * 1000))
    return MemoryTaskStore(settings.tasks_max_bytes)

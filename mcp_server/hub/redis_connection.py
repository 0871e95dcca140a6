"""The Redis hub's command connection pool: gevent sockets, no retries, and which failures mean "Redis is down"."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

import gevent.monkey
import gevent.queue
import gevent.socket
import redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

UNAVAILABLE = (RedisConnectionError, RedisTimeoutError, ReadOnlyError, OSError)
# The standard library's own socket class, even where gevent has patched the module.
BLOCKING_SOCKET = gevent.monkey.get_original("socket", "socket")


class CooperativeConnection(redis.Connection):
    """A redis-py TCP connection whose socket is gevent's, patched process or not."""

    def _connect(self) -> Any:
        """Connect as redis-py does, then hand the socket to gevent if it is a blocking stdlib one."""
        sock = super()._connect()
        if type(sock) is BLOCKING_SOCKET:
            cooperative = gevent.socket.socket(sock.family, sock.type, sock.proto, fileno=sock.detach())
            cooperative.settimeout(self.socket_timeout)
            return cooperative
        return sock


def connect(settings: Any, client_name: str) -> redis.Redis:
    """A client over a new bounded, blocking pool to MCP_REDIS_URL (nothing connects until first use)."""
    options: dict[str, Any] = {
        "max_connections": settings.redis_pool_size,
        "timeout": settings.redis_timeout_s,
        "queue_class": gevent.queue.LifoQueue,
        "socket_timeout": settings.redis_timeout_s,
        "socket_connect_timeout": settings.redis_timeout_s,
        # A retried script could append an event twice; a broken pooled connection is
        # already replaced by the pool before use, so no retries.
        "retry": Retry(NoBackoff(), 0),
        "protocol": 2,
        "client_name": client_name,
    }
    if urlparse(settings.redis_url).scheme == "redis":
        options["connection_class"] = CooperativeConnection
    pool = redis.BlockingConnectionPool.from_url(settings.redis_url, **options)
    return redis.Redis(connection_pool=pool)

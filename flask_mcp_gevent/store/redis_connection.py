"""The Redis store's connections: one Redis, a master found through Sentinel, or a Redis Cluster; gevent sockets,
no retries, and which failures mean "Redis is down"."""

from __future__ import annotations

import logging
import random
import time
from typing import Any
from urllib.parse import urlparse

import gevent.monkey
import gevent.queue
import gevent.socket
import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.connection import parse_url
from redis.exceptions import (
    ClusterDownError,
    MasterDownError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool, SentinelManagedConnection

from flask_mcp_gevent.conditions import StoreUnavailable

log = logging.getLogger("mcp.store")

# MasterNotFoundError (no Sentinel knows a master) is a ConnectionError; a cluster without a master for a slot
# answers CLUSTERDOWN or TRYAGAIN; a replica still syncing after a failover answers MASTERDOWN.
# NOSCRIPT reaches the store only when redis-py's own reload failed too: the script was loaded on one server and run
# on another, the master having moved in between (a failover), so it is an outage of a moment, not a bug.
# A Redis at its maxmemory with no eviction (OutOfMemoryError) cannot serve now either: clients retry later.
UNAVAILABLE = (RedisConnectionError, RedisTimeoutError, ReadOnlyError, ClusterDownError, TryAgainError,
               MasterDownError, NoScriptError, OutOfMemoryError, OSError)
# A master that cannot reach enough replicas (min-replicas-to-write) refuses writes with this error.
REFUSED_WRITES = ("NOREPLICAS",)
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


class CooperativeSentinelConnection(SentinelManagedConnection, CooperativeConnection):
    """A connection to whichever server the Sentinels name master when it connects, on a gevent socket."""


class BlockingSentinelPool(SentinelConnectionPool, redis.BlockingConnectionPool):
    """Sentinel's pool (finds the master, drops a former master's connections) with BlockingConnectionPool's bound."""


def unavailable(exc: BaseException) -> bool:
    """True when a Redis error means "the store cannot serve now" (answer 503) rather than a bug."""
    if isinstance(exc, UNAVAILABLE):
        return True
    return isinstance(exc, ResponseError) and str(exc).startswith(REFUSED_WRITES)


class OutageGuard:
    """The context every store command runs in: a failure that means Redis is down becomes StoreUnavailable."""

    # A class, not @contextmanager: it wraps every command, and costs a seventh as much.
    __slots__ = ("down_since",)

    def __init__(self) -> None:
        self.down_since: float | None = None

    def __enter__(self) -> None:
        """Nothing to set up."""

    def __exit__(self, kind: Any, exc: BaseException | None, traceback: Any) -> None:
        """Translate an outage; note its end on the first success after it (never swallows an exception)."""
        if exc is None:
            if self.down_since is not None:
                log.info("Redis reachable again after %.1f s", time.monotonic() - self.down_since)
                self.down_since = None
            return
        if not isinstance(exc, Exception) or not unavailable(exc):
            return
        if self.down_since is None:
            self.down_since = time.monotonic()
            log.warning("Redis unreachable (%s); answering 503 until it returns", type(exc).__name__)
        raise StoreUnavailable("session store unreachable") from None


def connect(settings: Any, client_name: str) -> Any:
    """A client for MCP_REDIS_URL, MCP_REDIS_SENTINELS or MCP_REDIS_CLUSTER (nothing connects until first use)."""
    options: dict[str, Any] = {
        "max_connections": settings.redis_pool_size,
        "timeout": settings.redis_timeout_s,
        "queue_class": gevent.queue.LifoQueue,
        "socket_timeout": settings.redis_timeout_s,
        "socket_connect_timeout": settings.redis_timeout_s,
        "protocol": 2,
        "client_name": client_name,
    }
    # No retries: a retried script could append an event twice, and the pool replaces a broken connection itself.
    no_retry = Retry(NoBackoff(), 0)
    cooperative = not settings.redis_url or urlparse(settings.redis_url).scheme == "redis"
    if settings.redis_sentinels:
        return _sentinel_master(settings, options, no_retry, cooperative)
    if cooperative:
        options["connection_class"] = CooperativeConnection
    if settings.redis_cluster:
        try:
            # Asks the node for the cluster's slot map at once: that node may be down.
            return RedisCluster.from_url(settings.redis_url, retry=no_retry,
                                         connection_pool_class=redis.BlockingConnectionPool, **options)
        except RedisClusterException as exc:
            raise RedisConnectionError(f"no Redis Cluster node answered: {exc}") from None
    pool = redis.BlockingConnectionPool.from_url(settings.redis_url, retry=no_retry, **options)
    return redis.Redis(connection_pool=pool)


def _sentinel_master(settings: Any, options: dict[str, Any], no_retry: Retry, cooperative: bool) -> redis.Redis:
    """A client whose connections go to the master the Sentinels name, found again after a failover."""
    if settings.redis_url:
        # Only the URL's credentials, database and scheme apply: the Sentinels say where the master is.
        url_options = parse_url(settings.redis_url)
        url_options.pop("host", None)
        url_options.pop("port", None)
        options = {**url_options, **options}
    if cooperative:
        options["connection_class"] = CooperativeSentinelConnection
    sentinel_options: dict[str, Any] = {
        "socket_timeout": settings.redis_timeout_s,
        "socket_connect_timeout": settings.redis_timeout_s,
        "retry": no_retry,
        "protocol": 2,
        "password": settings.redis_sentinel_password or None,
    }
    sentinel = Sentinel([], sentinel_kwargs=sentinel_options)
    # Redis() takes no connection class, its pool does: one pool per Sentinel, on gevent sockets.
    sentinel_class = CooperativeConnection if cooperative else redis.Connection
    sentinel.sentinels = [redis.Redis(connection_pool=redis.ConnectionPool(host=host, port=port,
                                                                          connection_class=sentinel_class,
                                                                          **sentinel_options))
                          for host, port in sentinel_addresses(settings.redis_sentinels)]
    return sentinel.master_for(settings.redis_sentinel_master, redis_class=redis.Redis,
                               connection_pool_class=BlockingSentinelPool, retry=no_retry, **options)


def sentinel_addresses(entries: tuple[str, ...]) -> list[tuple[str, int]]:
    """MCP_REDIS_SENTINELS's host:port entries (checked by Settings) as (host, port)."""
    return [(host.strip("[]"), int(port)) for host, _, port in (entry.rpartition(":") for entry in entries)]


def subscriber_connection(client: Any) -> Any:
    """A new connection outside the pool for the subscriber greenlet: to the current master, or a cluster's."""
    if isinstance(client, RedisCluster):  # any master: a cluster delivers PUBLISH to subscribers on every node
        client = random.choice(client.get_primaries()).redis_connection
    pool = client.connection_pool
    return pool.connection_class(**pool.connection_kwargs)

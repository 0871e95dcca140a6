"""The Redis store's one command path (RedisLink): every part of the store sends through it, in the process it serves.

Over redis:// the multiplexer sends every greenlet's commands on one connection (redis-py cannot); else redis-py does.
Either way a failure that means Redis is down comes out as StoreUnavailable (OutageGuard).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.exceptions import AskError, MovedError
from redis.exceptions import ConnectionError as RedisConnectionError

from flask_mcp_gevent.store.redis_connection import CooperativeConnection, OutageGuard, connect
from flask_mcp_gevent.store.redis_multiplex import Multiplexer

__all__ = ["RUN_BATCH", "RedisLink", "multiplexer_for"]

# Forks this process has gone through: a link checks it, not os.getpid() (a system call), on every command.
_forks = [0]
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))
# Script runs sent in one round trip by run_each (claim refreshes, lease renewals).
RUN_BATCH = 500


def multiplexer_for(client: Any) -> Multiplexer | None:
    """The multiplexer for a plain Redis over gevent TCP; None where redis-py sends (TLS, Unix, Sentinel, Cluster)."""
    pool = getattr(client, "connection_pool", None)
    if (type(client) is redis.Redis and type(pool) is redis.BlockingConnectionPool
            and issubclass(pool.connection_class, CooperativeConnection)):
        return Multiplexer(pool, pool.timeout)
    return None


class RedisLink:
    """One worker's commands and scripts, on the multiplexer or redis-py's client, whichever its Redis allows."""

    def __init__(self, settings: Any, start: Callable[[], None], scripts: dict[str, str]) -> None:
        self.settings = settings
        # The Lua sources of every script the store runs, by name (more come with add_scripts).
        self.sources = dict(scripts)
        # The store's start: connecting lazily (after gunicorn forks) starts the worker's greenlets too.
        self.start = start
        self.guard = OutageGuard()
        self.reset()

    def forked(self) -> bool:
        """True in a process forked since the link was made or last reset (its connections are the parent's)."""
        return self.fork_seen != _forks[0]

    def reset(self) -> None:
        """Forget what a parent process owned: its client, command path and identity."""
        self.fork_seen = _forks[0]
        # The pid makes a stream's owner readable in Redis (which process holds it); the token, unique.
        self.worker_id = f"{os.getpid()}-{secrets.token_hex(6)}"
        # redis-py's client (a Redis, or a RedisCluster): Any, since redis-py types its replies as sync or async.
        self._client: Any = None
        self.multiplexer: Multiplexer | None = None
        self.scripts: dict[str, Any] = {}

    def add_scripts(self, scripts: dict[str, str]) -> None:
        """Run these scripts too (the tasks extension's): registered now if connected, else when it connects."""
        self.sources.update(scripts)
        if self._client is not None:
            self.scripts.update({name: self._client.register_script(source) for name, source in scripts.items()})

    @property
    def client(self) -> Any:
        """The command connection pool's client, created on first use (a cluster's asks a node for its slots)."""
        self.start()
        if self._client is None:
            client = connect(self.settings, "mcp-" + self.worker_id)
            self.scripts = {name: client.register_script(source) for name, source in self.sources.items()}
            self.multiplexer = multiplexer_for(client)
            self._client = client
        return self._client

    def connected(self) -> Any:
        """The client of this process, created on first use (skipping the start check on every later command)."""
        if self.fork_seen != _forks[0] or self._client is None:
            with self.guard:  # a cluster's client asks a node for its slots as it is made: that node may be down
                return self.client
        return self._client

    def run(self, name: str, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """Run one of the store's Lua scripts; its reply."""
        with self.guard:
            self.connected()
            if self.multiplexer is not None:
                return self.multiplexer.run(self.scripts[name], keys, args)
            return self.scripts[name](keys=keys, args=args)  # redis-py loads it on NOSCRIPT

    def execute(self, *args: Any) -> Any:
        """Send one Redis command; its reply."""
        with self.guard:
            client = self.connected()
            if self.multiplexer is not None:
                return self.multiplexer.execute(*args)
            return client.execute_command(*args)

    def run_each(self, name: str, runs: Sequence[tuple[Sequence[str], Sequence[Any]]]) -> list[Any]:
        """Run a script once per (keys, args), RUN_BATCH runs per round trip to each Redis server; the replies."""
        replies: list[Any] = []
        for start in range(0, len(runs), RUN_BATCH):
            with self.guard:
                replies += self._pipelined(name, runs[start:start + RUN_BATCH])
        return replies

    def _pipelined(self, name: str, runs: Sequence[tuple[Sequence[str], Sequence[Any]]]) -> list[Any]:
        """Run a script once per (keys, args) in one pipeline per Redis server (on a cluster, per master)."""
        client = self.connected()
        pipelines: dict[str, Any] = {}
        places: list[tuple[str, int]] = []
        for keys, args in runs:
            server, target = "", client
            if isinstance(client, RedisCluster):  # a cluster's own pipeline refuses scripts: a plain one per master
                node = client.get_node_from_key(keys[0])
                server, target = node.name, node.redis_connection
            if server not in pipelines:
                # A plain server's pipeline loads the scripts it lacks before it runs (a promoted replica has none).
                pipelines[server] = target.pipeline(transaction=False)
            places.append((server, len(pipelines[server])))
            self.scripts[name](keys=keys, args=args, client=pipelines[server])
        try:
            replies = {server: pipeline.execute() for server, pipeline in pipelines.items()}
        except (MovedError, AskError):
            # Slots moved: the client learns the new map on its next command (callers are periodic, and retry).
            client.nodes_manager.initialize()
            raise RedisConnectionError("Redis Cluster slots moved during a batch") from None
        return [replies[server][place] for server, place in places]

    def subscribers(self, channel: str) -> int:
        """How many connections listen on a channel of a cluster, on every node (PUBSUB NUMSUB counts one's)."""
        with self.guard:
            numsub = self.client.pubsub_numsub(channel, target_nodes=RedisCluster.ALL_NODES)
        return int(dict(numsub).get(channel.encode(), 0))

    def stop(self) -> None:
        """Close this worker's connections (tests; a worker simply exits)."""
        if self.multiplexer is not None:
            self.multiplexer.close()
        if self._client is not None:
            self._client.close()

"""The Redis hub's one command path (RedisLink): every part of the hub sends through it, in the process it serves.

Over redis:// the multiplexer sends every greenlet's commands on one connection (redis-py cannot); else redis-py does.
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

from flask_mcp_gevent.hub.redis_connection import CooperativeConnection, OutageGuard, connect, is_cluster
from flask_mcp_gevent.hub.redis_multiplex import Multiplexer

__all__ = ["RedisLink", "RedisPyCommands", "ScriptBatch", "commands_for"]

# Forks this process has gone through: a link checks it, not os.getpid() (a system call), on every command.
_forks = [0]
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))


class RedisPyCommands:
    """The multiplexer's methods on redis-py's client (TLS, Unix socket, Sentinel, Cluster); each waits for a reply."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def run(self, script: Any, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """Run a script through redis-py (which loads it on NOSCRIPT)."""
        return script(keys=list(keys), args=list(args))

    def execute(self, *args: Any) -> Any:
        """Send one command; its reply as redis-py gives it."""
        return self.client.execute_command(*args)

    def close(self) -> None:
        """Nothing of its own to close: its connections are the client's."""


def commands_for(client: Any) -> Multiplexer | RedisPyCommands:
    """The multiplexer over a plain BlockingConnectionPool of gevent TCP sockets; redis-py's client otherwise."""
    pool = getattr(client, "connection_pool", None)
    if (type(client) is redis.Redis and type(pool) is redis.BlockingConnectionPool
            and issubclass(pool.connection_class, CooperativeConnection)):
        return Multiplexer(pool, pool.timeout)
    return RedisPyCommands(client)


class ScriptBatch:
    """Script runs in one pipeline per Redis server (on a cluster, one per master owning their keys)."""

    def __init__(self, client: Any, scripts: dict[str, Any]) -> None:
        self.client = client
        self.scripts = scripts
        self.pipelines: dict[str, tuple[Any, list[int]]] = {}
        # For each run, in the order added: which pipeline, and its place there.
        self.order: list[tuple[str, int]] = []

    def add(self, name: str, keys: Sequence[str], args: list[Any]) -> None:
        """Queue one run of a script (all its keys in one hash slot, so on one master)."""
        server, target = "", self.client
        if is_cluster(self.client):  # a cluster's own pipeline refuses scripts: a plain one per master
            node = self.client.get_node_from_key(keys[0])
            server, target = node.name, node.redis_connection
        if server not in self.pipelines:
            # A plain server's pipeline loads the scripts it lacks before it runs (a promoted replica has none).
            self.pipelines[server] = (target.pipeline(transaction=False), [0])
        pipeline, count = self.pipelines[server]
        self.scripts[name](keys=keys, args=args, client=pipeline)
        self.order.append((server, count[0]))
        count[0] += 1

    def execute(self) -> list[Any]:
        """Run every pipeline; the replies in the order the runs were added."""
        replies: dict[str, list[Any]] = {}
        for server, (pipeline, _) in self.pipelines.items():
            try:
                replies[server] = pipeline.execute()
            except (MovedError, AskError):
                # Slots moved: the client learns the new map on its next command (callers are periodic, and retry).
                self.client.nodes_manager.initialize()
                raise RedisConnectionError("Redis Cluster slots moved during a batch") from None
        return [replies[server][place] for server, place in self.order]


class RedisLink:
    """One worker's commands and scripts, on the multiplexer or redis-py's client, whichever its Redis allows."""

    def __init__(self, settings: Any, start: Callable[[], None], scripts: dict[str, str]) -> None:
        self.settings = settings
        # The Lua sources of every script the hub runs, by name.
        self.sources = scripts
        # The hub's start: connecting lazily (after gunicorn forks) starts the worker's greenlets too.
        self.start = start
        self.guard = OutageGuard()
        self.worker_id = ""
        self.fork_seen = -1
        # redis-py's client (a Redis, or a RedisCluster): Any, since redis-py types its replies as sync or async.
        self._client: Any = None
        self.scripts: dict[str, Any] = {}
        self.commands: Multiplexer | RedisPyCommands | None = None

    def forked(self) -> bool:
        """True when this process is not the one the link last served (or it never served one)."""
        return self.fork_seen != _forks[0]

    def reset(self) -> None:
        """Forget what a parent process owned: its client, command path and identity."""
        self.fork_seen = _forks[0]
        # The pid makes a stream's owner readable in Redis (which process holds it); the token, unique.
        self.worker_id = f"{os.getpid()}-{secrets.token_hex(6)}"
        self._client = None
        self.commands = None
        self.scripts = {}

    @property
    def client(self) -> Any:
        """The command connection pool's client, created on first use (a cluster's asks a node for its slots)."""
        self.start()
        if self._client is None:
            client = connect(self.settings, "mcp-" + self.worker_id)
            self.scripts = {name: client.register_script(source) for name, source in self.sources.items()}
            self.commands = commands_for(client)
            self._client = client
        return self._client

    def path(self) -> Multiplexer | RedisPyCommands:
        """The command path of this process, creating the client on first use."""
        if self.fork_seen != _forks[0] or self.commands is None:
            self.client  # noqa: B018  (starts the worker's greenlets, creates the client and its commands)
        assert self.commands is not None
        return self.commands

    def script_batch(self) -> ScriptBatch:
        """Script runs to queue and run together: one round trip per Redis server (refreshes, renewals)."""
        return ScriptBatch(self.client, self.scripts)

    def run(self, name: str, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """Run one of the hub's Lua scripts; its reply."""
        commands = self.path()
        return commands.run(self.scripts[name], keys, args)

    def execute(self, *args: Any) -> Any:
        """Send one Redis command; its reply."""
        return self.path().execute(*args)

    def subscribers(self, channel: str) -> int:
        """How many connections listen on a channel of a cluster, on every node (PUBSUB NUMSUB counts one's)."""
        numsub = self.client.pubsub_numsub(channel, target_nodes=RedisCluster.ALL_NODES)
        return int(dict(numsub).get(channel.encode(), 0))

    def stop(self) -> None:
        """Close this worker's connections (tests; a worker simply exits)."""
        if self.commands is not None:
            self.commands.close()
        if self._client is not None:
            self._client.close()

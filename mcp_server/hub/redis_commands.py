"""The Redis hub's one command interface, and its two implementations.

Over plain TCP (redis://) the multiplexer (redis_multiplex.py) sends every greenlet's commands on one connection,
which redis-py cannot; over TLS, a Unix socket, Sentinel or Cluster, redis-py's client sends them (RedisPyCommands),
on connections of its bounded pool. The hub's parts send through this interface only, never asking which it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import redis
from redis.exceptions import RedisError, ResponseError

from mcp_server.hub.redis_connection import CooperativeConnection
from mcp_server.hub.redis_multiplex import Multiplexer

__all__ = ["Commands", "RedisPyCommands", "commands_for"]

# Commands sent ahead of another, in the same write where the path allows (a call slot's release).
Ahead = tuple[tuple[Any, ...], ...]


class Commands(Protocol):
    """What the hub's parts send: commands, scripts (redis-py Script objects: a SHA and its source), and posts."""

    def run(self, script: Any, keys: Sequence[Any], args: Sequence[Any], before: Ahead = ()) -> Any:
        """Run a script by its SHA (loading it if Redis lacks it), after the commands in before; its reply."""

    def execute(self, *args: Any, before: Ahead = ()) -> Any:
        """Send one command after the commands in before; its reply (an error reply raised)."""

    def post(self, commands: list[tuple[Any, ...]]) -> None:
        """Send commands whose replies nobody needs, written before this greenlet goes on."""

    def post_nowait(self, commands: list[tuple[Any, ...]]) -> int:
        """Queue commands whose replies nobody needs; the post's number, for written and wait_written."""

    def written(self, number: int) -> bool:
        """Whether the post with this number is written (or its connection failed)."""

    def wait_written(self, number: int) -> None:
        """Return once the post with this number is written (or its connection failed)."""

    def post_script(self, script: Any, keys: Sequence[Any], args: Sequence[Any], before: Ahead,
                    on_done: Callable[[BaseException | None], None]) -> None:
        """Run a script whose reply nobody waits for; on_done hears None, or its error or lost connection."""

    def close(self) -> None:
        """Close what this path holds of its own."""


class RedisPyCommands:
    """The command interface on redis-py's client: TLS, Unix sockets, Sentinel's master, a Cluster's nodes.

    Each command waits for its reply: what goes ahead is sent first, and a post is written when it returns.
    """

    def __init__(self, client: Any) -> None:
        self.client = client

    def run(self, script: Any, keys: Sequence[Any], args: Sequence[Any], before: Ahead = ()) -> Any:
        """Run a script through redis-py (which loads it on NOSCRIPT), after the commands in before."""
        self.post(list(before))
        return script(keys=list(keys), args=list(args))

    def execute(self, *args: Any, before: Ahead = ()) -> Any:
        """Send one command after the commands in before; its reply as redis-py gives it."""
        self.post(list(before))
        return self.client.execute_command(*args)

    def post(self, commands: list[tuple[Any, ...]]) -> None:
        """Send commands one by one; an error reply nobody asked for raises nothing, a lost connection does."""
        for command in commands:
            try:
                self.client.execute_command(*command)
            except ResponseError:
                pass

    def post_nowait(self, commands: list[tuple[Any, ...]]) -> int:
        """Send commands now (this path cannot queue them); written already."""
        self.post(commands)
        return 0

    def written(self, number: int) -> bool:
        """Every post is written by the time it returns."""
        return True

    def wait_written(self, number: int) -> None:
        """Nothing to wait for: every post is written by the time it returns."""

    def post_script(self, script: Any, keys: Sequence[Any], args: Sequence[Any], before: Ahead,
                    on_done: Callable[[BaseException | None], None]) -> None:
        """Run a script, wait, and tell on_done how it went (from this greenlet)."""
        try:
            self.run(script, keys, args, before)
        except (RedisError, OSError) as error:
            on_done(error)
            return
        on_done(None)

    def close(self) -> None:
        """Nothing of its own to close: its connections are the client's."""


def commands_for(client: Any) -> Commands:
    """The multiplexer over a plain BlockingConnectionPool of gevent TCP sockets; redis-py's client otherwise."""
    pool = getattr(client, "connection_pool", None)
    if (type(client) is redis.Redis and type(pool) is redis.BlockingConnectionPool
            and issubclass(pool.connection_class, CooperativeConnection)):
        return Multiplexer(pool, pool.timeout)
    return RedisPyCommands(client)

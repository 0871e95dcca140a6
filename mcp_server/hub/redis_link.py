"""The Redis hub's command path: one worker's client, its scripts and command interface, what failures mean.

Every part of the hub (sessions, call slots, claims, deliveries, the listener, tasks) sends through one RedisLink.
It also knows which process it serves: after a fork, the parent's connections and identity are not this one's.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from typing import Any

import gevent
from redis.cluster import RedisCluster

from mcp_server.hub.redis_batch import ScriptBatch
from mcp_server.hub.redis_commands import Commands, commands_for
from mcp_server.hub.redis_connection import OutageGuard, connect, is_cluster

__all__ = ["RedisLink"]

# Forks this process has gone through: a link checks it, not os.getpid() (a system call), on every command.
_forks = [0]
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))


class RedisLink:
    """One worker's commands and scripts, on the one command interface (redis_commands.py)."""

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
        self.commands: Commands | None = None
        # Commands a greenlet left to go out ahead of its next one (a call slot's release ahead of its answer).
        self.ahead: dict[gevent.Greenlet, tuple[Any, ...]] = {}

    def forked(self) -> bool:
        """True when this process is not the one the link last served (or it never served one)."""
        return self.fork_seen != _forks[0]

    def reset(self) -> None:
        """Forget what a parent process owned: its client, command interface and identity."""
        self.fork_seen = _forks[0]
        # The pid makes a stream's owner readable in Redis (which process holds it); the token, unique.
        self.worker_id = f"{os.getpid()}-{secrets.token_hex(6)}"
        self._client = None
        self.commands = None
        self.scripts = {}
        self.ahead = {}

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

    def path(self) -> Commands:
        """The command interface of this process, creating the client on first use."""
        if self.fork_seen != _forks[0] or self.commands is None:
            self.client  # noqa: B018  (starts the worker's greenlets, creates the client and its commands)
        assert self.commands is not None
        return self.commands

    def script_batch(self) -> ScriptBatch:
        """Script runs to queue and run together: one round trip per Redis server (refreshes, renewals)."""
        return ScriptBatch(self.client, self.scripts)

    def run(self, name: str, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """Run one of the hub's Lua scripts after what this greenlet left to send ahead; its reply."""
        commands = self.commands  # path(), without its call where nothing needs making (every call's commands)
        if commands is None or self.fork_seen != _forks[0]:
            commands = self.path()
        return commands.run(self.scripts[name], keys, args, self.take_ahead_commands() if self.ahead else ())

    def execute(self, *args: Any) -> Any:
        """Send one Redis command after what this greenlet left to send ahead; its reply."""
        commands = self.commands
        if commands is None or self.fork_seen != _forks[0]:
            commands = self.path()
        return commands.execute(*args, before=self.take_ahead_commands() if self.ahead else ())

    def post(self, *args: Any) -> None:
        """Send one command whose reply nobody needs: on the multiplexer, written before this greenlet goes on."""
        commands = self.path()
        commands.post([*self.take_ahead_commands(), args] if self.ahead else [args])

    def post_nowait(self, *args: Any) -> int:
        """Queue one command whose reply nobody needs, not waiting for its write; the post's number."""
        commands = self.path()
        return commands.post_nowait([*self.take_ahead_commands(), args] if self.ahead else [args])

    def written(self, number: int) -> bool:
        """Whether the post with this number is written (or its connection failed)."""
        return self.path().written(number)

    def wait_written(self, number: int) -> None:
        """Return once the post with this number is written (or its connection failed)."""
        self.path().wait_written(number)

    def post_script(self, name: str, keys: Sequence[Any], args: Sequence[Any],
                    on_done: Callable[[BaseException | None], None]) -> None:
        """Run one of the hub's scripts without waiting for its reply; on_done hears None or its failure."""
        commands = self.commands
        if commands is None or self.fork_seen != _forks[0]:
            commands = self.path()
        commands.post_script(self.scripts[name], keys, args, self.take_ahead_commands() if self.ahead else (),
                             on_done)

    def subscribers(self, channel: str) -> int:
        """How many connections listen on a channel: on a cluster, on every node (PUBSUB NUMSUB counts one's)."""
        client = self.client
        nodes = {"target_nodes": RedisCluster.ALL_NODES} if is_cluster(client) else {}
        return int(dict(client.pubsub_numsub(channel, **nodes)).get(channel.encode(), 0))

    def send_ahead(self, command: tuple[Any, ...]) -> None:
        """Send a command ahead of this greenlet's next one, in the same write (one per greenlet at a time)."""
        self.ahead[gevent.getcurrent()] = command

    def take_ahead(self) -> tuple[Any, ...] | None:
        """The command this greenlet left to send ahead, taken back (None when there is none)."""
        if not self.ahead:
            return None
        return self.ahead.pop(gevent.getcurrent(), None)

    def take_ahead_commands(self) -> tuple[tuple[Any, ...], ...]:
        """take_ahead as the commands to send before the next one: none or one."""
        command = self.take_ahead()
        return () if command is None else (command,)

    def stop(self) -> None:
        """Close this worker's connections (tests; a worker simply exits)."""
        if self.commands is not None:
            self.commands.close()
        if self._client is not None:
            self._client.close()

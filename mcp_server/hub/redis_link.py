"""The Redis hub's command path: one worker's client, its scripts and lean path, what Redis failures mean.

Every part of the hub (sessions, call slots, claims, deliveries, the listener, tasks) sends through one RedisLink.
It also knows which process it serves: after a fork, the parent's connections and identity are not this one's.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from typing import Any

import gevent

from mcp_server.hub.redis_batch import ScriptBatch
from mcp_server.hub.redis_commands import LeanCommands, lean_commands
from mcp_server.hub.redis_connection import OutageGuard, connect
from mcp_server.hub.redis_multiplex import Multiplexer
from mcp_server.hub.redis_resp import pack
from mcp_server.hub.redis_scripts import SCRIPTS

__all__ = ["RedisLink"]

# Forks this process has gone through: a link checks it, not os.getpid() (a system call), on every command.
_forks = [0]
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))


class RedisLink:
    """One worker's commands and scripts: redis-py's client, and the lean path where its pool allows one."""

    def __init__(self, settings: Any, start: Callable[[], None]) -> None:
        self.settings = settings
        # The hub's start: connecting lazily (after gunicorn forks) starts the worker's greenlets too.
        self.start = start
        self.guard = OutageGuard()
        self.worker_id = ""
        self.fork_seen = -1
        # redis-py's client (a Redis, or a RedisCluster): Any, since redis-py types its replies as sync or async.
        self._client: Any = None
        self.scripts: dict[str, Any] = {}
        self.lean: LeanCommands | Multiplexer | None = None
        # Commands a greenlet left to go out ahead of its next one (a call slot's release ahead of its answer).
        self.ahead: dict[gevent.Greenlet, tuple[Any, ...]] = {}

    def forked(self) -> bool:
        """True when this process is not the one the link last served (or it never served one)."""
        return self.fork_seen != _forks[0]

    def reset(self) -> None:
        """Forget what a parent process owned: its client, lean path and identity."""
        self.fork_seen = _forks[0]
        # The pid makes a stream's owner readable in Redis (which process holds it); the token, unique.
        self.worker_id = f"{os.getpid()}-{secrets.token_hex(6)}"
        self._client = None
        self.lean = None
        self.scripts = {}
        self.ahead = {}

    @property
    def client(self) -> Any:
        """The command connection pool's client, created on first use (a cluster's asks a node for its slots)."""
        self.start()
        if self._client is None:
            client = connect(self.settings, "mcp-" + self.worker_id)
            self.scripts = {name: client.register_script(source) for name, source in SCRIPTS.items()}
            # The per-call commands' lean path, for a plain pool (None on Sentinel and Cluster: redis-py's path).
            self.lean = lean_commands(client)
            self._client = client
        return self._client

    def lean_path(self) -> LeanCommands | Multiplexer | None:
        """The per-call commands' path of this process, creating the client on first use."""
        if self.fork_seen != _forks[0] or self._client is None:
            self.client  # noqa: B018  (starts the worker's greenlets, creates the client and its lean path)
        return self.lean

    def script_batch(self) -> ScriptBatch:
        """Script runs to queue and run together: one round trip per Redis server."""
        return ScriptBatch(self.client, self.scripts)

    def run(self, name: str, keys: Sequence[str], args: list[Any], packed: bytes | None = None) -> Any:
        """Run one of the hub's Lua scripts (on the lean path where there is one; packed: see evalsha)."""
        lean = self.lean_path()
        if lean is not None:
            before = self.take_ahead_commands() if self.ahead else ()
            return lean.evalsha(self.scripts[name], keys, args, before, packed)
        return self.scripts[name](keys=keys, args=args)

    def execute(self, *args: Any) -> Any:
        """Send one Redis command, on the lean path where the pool allows it (raw replies: bytes, int, None)."""
        lean = self.lean_path()
        if lean is not None:
            return lean.execute(*args, before=self.take_ahead_commands() if self.ahead else ())
        return self.client.execute_command(*args)

    def post(self, *args: Any) -> None:
        """Send one command whose reply nobody needs: on the multiplexer, written before this greenlet goes on."""
        lean = self.lean_path()
        if lean is not None:
            lean.post([*self.take_ahead_commands(), args])
        else:
            self.client.execute_command(*args)

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

    def take_ahead_packed(self) -> bytes:
        """take_ahead in RESP, b"" when there is none."""
        command = self.take_ahead() if self.ahead else None
        return b"" if command is None else pack(command)

    def stop(self) -> None:
        """Close this worker's connections (tests; a worker simply exits)."""
        if self.lean is not None:
            self.lean.close()
        if self._client is not None:
            self._client.close()

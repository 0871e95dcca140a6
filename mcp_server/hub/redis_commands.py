"""The Redis hub's per-call commands, sent on a connection of its pool without redis-py's per-command layers.

redis-py's client spends more CPU around a command than the round trip itself costs: a dirty check that polls the
socket, connection-count and wait-time records, a retry wrapper, the command packed in pieces and written with
one sendall each. Where the hub cannot multiplex (redis_multiplex.py: over TLS or a Unix socket), the commands
every tool call makes go through here instead: one packed write, one read per reply. The connection is borrowed
from the same bounded pool and put back, so MCP_REDIS_POOL_SIZE and MCP_REDIS_TIMEOUT_S bound these as they bound
every other command; a connection that failed mid-command is closed before it goes back (redis-py's own send and
read close it), and one Redis closed is reconnected before use, so none is ever reused dirty.
"""

from __future__ import annotations

from collections.abc import Sequence
from queue import Empty
from typing import Any

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from mcp_server.hub.redis_connection import CooperativeConnection
from mcp_server.hub.redis_multiplex import Multiplexer
from mcp_server.hub.redis_resp import PipelinedCommands, pack

__all__ = ["LeanCommands", "lean_commands"]


class LeanCommands(PipelinedCommands):
    """Commands on connections borrowed from a redis-py BlockingConnectionPool's own queue."""

    def __init__(self, pool: redis.BlockingConnectionPool) -> None:
        self.pool = pool

    def pipeline(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """Send several commands in one write and return their replies in order, an error reply as its exception.

        Every reply is read, so the connection goes back clean.
        """
        connection = self._borrow()
        try:
            connection.send_packed_command([b"".join(pack(command) for command in commands)], check_health=False)
            replies = []
            for _ in commands:
                try:
                    replies.append(connection.read_response())
                except ResponseError as error:
                    replies.append(error)
            return replies
        finally:
            self.pool.pool.put_nowait(connection)

    def evalsha(self, script: Any, keys: Sequence[Any], args: list[Any], before: tuple[tuple[Any, ...], ...] = (),
                packed: bytes | None = None) -> Any:
        """Run a registered script (a redis-py Script) by its SHA, loading it first if Redis does not have it.

        packed (keys and args in RESP already) is not used here: redis-py's connection packs its own.
        A NOSCRIPT reply means the script did not run, so running it after the load runs it once.
        """
        command = ("EVALSHA", script.sha, len(keys), *keys, *args)
        try:
            return self.execute(*command, before=before)
        except NoScriptError:
            self.execute("SCRIPT", "LOAD", script.script)
            return self.execute(*command)

    def close(self) -> None:
        """Nothing of its own to close: its connections are the pool's."""

    def _borrow(self) -> Any:
        """A connected connection from the pool's queue; ConnectionError past the pool's timeout.

        As redis-py's pool does, a connection that has something to read before it was asked anything (Redis
        closed it: restarted, say) is reconnected first, so a restart costs no command its reply.
        """
        try:
            connection = self.pool.pool.get(block=True, timeout=self.pool.timeout)
        except Empty:
            raise RedisConnectionError("No connection available.") from None
        try:
            if connection is None:
                connection = self.pool.make_connection()
            connection.connect()  # at once if connected; a Redis that is down fails here, after one attempt
            try:
                if connection.can_read():
                    raise RedisConnectionError("Connection has data")
            except (RedisConnectionError, RedisTimeoutError, OSError):
                connection.disconnect()
                connection.connect()
                if connection.can_read():
                    raise RedisConnectionError("Connection not ready") from None
        except BaseException:
            self.pool.pool.put_nowait(connection)
            raise
        return connection


def lean_commands(client: Any) -> LeanCommands | Multiplexer | None:
    """The lean path for a client over a plain BlockingConnectionPool; None for any other (Sentinel, Cluster).

    Over gevent's TCP sockets (redis://), every greenlet's commands share one connection (redis_multiplex.py);
    over TLS or a Unix socket, each command borrows a pooled connection.
    """
    pool = getattr(client, "connection_pool", None)
    if type(client) is redis.Redis and type(pool) is redis.BlockingConnectionPool:
        if issubclass(pool.connection_class, CooperativeConnection):
            return Multiplexer(pool, pool.timeout)
        return LeanCommands(pool)
    return None

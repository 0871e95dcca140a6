"""Every greenlet's Redis commands on one connection: one write per turn of gevent's loop, not system calls per command.

Redis replies in order (no ids needed); a lost connection or a timeout fails every waiting command as redis-py's would.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import gevent
import gevent.lock
import hiredis
from gevent.hub import Waiter, get_hub
from redis._parsers.base import BaseParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

__all__ = ["HiredisParser", "Multiplexer", "pack", "reply_or_raise"]

READ_SIZE = 65536
# One command (a tuple) in RESP, by hiredis (C): str (as UTF-8), bytes, int or float arguments, else TypeError.
pack = hiredis.pack_command


class HiredisParser:
    """Replies, undecoded, out of the bytes a connection receives (hiredis); an error reply as redis-py's exception."""

    def __init__(self) -> None:
        self.reader = hiredis.Reader(protocolError=ValueError, replyError=BaseParser.parse_error)

    def feed(self, data: bytes) -> list[Any]:
        """Every reply completed by data, in order; a reply cut short waits for the next feed."""
        reader = self.reader
        reader.feed(data)
        replies = []
        while (reply := reader.gets()) is not False:
            replies.append(reply)
        return replies


def reply_or_raise(reply: Any) -> Any:
    """A command's reply, or its error reply raised."""
    if isinstance(reply, RedisError):
        raise reply
    return reply


class PendingCall:
    """One greenlet's command, waiting for its reply."""

    __slots__ = ("deadline", "reply", "error", "waiter", "done")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.reply: Any = None
        self.error: BaseException | None = None
        self.waiter: Waiter | None = None
        self.done = False

    def finish(self, reply: Any = None, error: BaseException | None = None) -> None:
        """Wake the asking greenlet (from the store's loop: a Waiter is switched to from there only)."""
        self.done = True
        self.reply = reply
        self.error = error
        if self.waiter is not None:
            get_hub().loop.run_callback(self.waiter.switch, None)

    def wait(self) -> Any:
        """The reply, once it has arrived; the connection's failure as an exception."""
        if not self.done:
            self.waiter = Waiter()
            self.waiter.get()
        if self.error is not None:
            raise self.error
        return self.reply


class Multiplexer:
    """Commands of every greenlet on one connection made like the pool's (same address, credentials, database)."""

    def __init__(self, pool: Any, timeout_s: float) -> None:
        self.pool = pool
        self._connection: Any = None
        self._sock: Any = None
        self._calls: deque[PendingCall] = deque()
        self._outgoing: list[bytes] = []
        # The writer greenlet's wake-up while it waits for something to write.
        self._writer_waiting: Waiter | None = None
        self._connecting = gevent.lock.Semaphore()
        self._connect_attempts = 0
        self._connect_failure: str | None = None
        self._greenlets: list[gevent.Greenlet] = []
        # The watchdog looks every _watch_s and fails a command older than _patience_s: so within timeout_s.
        self._watch_s = min(0.25, timeout_s / 4)
        self._patience_s = timeout_s - self._watch_s

    def run(self, script: Any, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """Run a registered script by its SHA (loaded once on NOSCRIPT); its reply."""
        command = pack(("EVALSHA", script.sha, len(keys), *keys, *args))
        reply = self._enqueue(command).wait()
        if isinstance(reply, NoScriptError):  # it did not run: load it, send it again
            self.execute("SCRIPT", "LOAD", script.script)
            return reply_or_raise(self._enqueue(command).wait())
        return reply_or_raise(reply)

    def execute(self, *args: Any) -> Any:
        """Send one command; its reply (an error reply raised)."""
        return reply_or_raise(self._enqueue(pack(args)).wait())

    def _enqueue(self, data: bytes) -> PendingCall:
        """Queue a command in RESP (connecting if needed) and wake the writer; return the call awaiting its reply."""
        if self._sock is None:
            self._connect()
        call = PendingCall(time.monotonic() + self._patience_s)
        # The bytes and the call join their queues in the same step: replies come back in this order.
        self._outgoing.append(data)
        self._calls.append(call)
        writer = self._writer_waiting
        if writer is not None:  # waiting for something to send: let it send this
            self._writer_waiting = None
            get_hub().loop.run_callback(writer.switch, None)
        return call

    def close(self) -> None:
        """Close the connection and fail what waits on it (the store's stop)."""
        if self._sock is not None:
            self._fail(self._sock, RedisConnectionError("Redis connection closed"))

    def _write_forever(self, sock: Any) -> None:
        """Write what every greenlet queued, together, until the connection fails."""
        # Never a caller: one killed mid-write (a cancelled tool call) would leave half a command on the wire.
        try:
            while sock is self._sock:
                if not self._outgoing:
                    self._writer_waiting = Waiter()
                    self._writer_waiting.get()  # a caller that queued something wakes it
                    continue
                data = b"".join(self._outgoing)
                self._outgoing.clear()
                sock.sendall(data)
        except OSError as exc:
            self._fail(sock, RedisConnectionError(f"Error writing to Redis: {exc}"))

    def _connect(self) -> None:
        """Connect (one greenlet does; the others wait for it) and start the reader, the writer and the watchdog."""
        attempts_seen = self._connect_attempts
        with self._connecting:
            if self._sock is not None:
                return
            if self._connect_attempts != attempts_seen and self._connect_failure is not None:
                # An attempt made while this greenlet waited failed: share its answer, do not queue up another.
                raise RedisConnectionError(self._connect_failure)
            self._connect_attempts += 1
            connection = self.pool.connection_class(**self.pool.connection_kwargs)
            try:
                connection.connect()  # the handshake redis-py does: AUTH, SELECT, CLIENT SETNAME
            except Exception as exc:
                self._connect_failure = str(exc) or type(exc).__name__
                raise
            self._connect_failure = None
            sock = connection._sock
            # Idle is not an outage: the watchdog times out commands, not the quiet between them.
            sock.settimeout(None)
            self._connection, self._sock = connection, sock
            self._writer_waiting = None
            self._greenlets = [gevent.spawn(self._read_forever, sock), gevent.spawn(self._write_forever, sock),
                               gevent.spawn(self._watch, sock)]

    def _read_forever(self, sock: Any) -> None:
        """Hand each reply to the call that asked, in order, until the connection fails."""
        parser = HiredisParser()
        calls = self._calls
        try:
            while True:
                data = sock.recv(READ_SIZE)
                if not data:
                    raise RedisConnectionError("Redis closed the connection")
                for reply in parser.feed(data):
                    if not calls:
                        raise RedisConnectionError("Redis sent a reply nobody asked for")
                    calls.popleft().finish(reply)
        except (OSError, RedisConnectionError, ValueError) as exc:
            self._fail(sock, exc if isinstance(exc, RedisConnectionError)
                       else RedisConnectionError(f"Error reading from Redis: {exc}"))

    def _watch(self, sock: Any) -> None:
        """Fail the connection when its oldest command would otherwise wait past MCP_REDIS_TIMEOUT_S."""
        while sock is self._sock:
            gevent.sleep(self._watch_s)
            if self._calls and time.monotonic() > self._calls[0].deadline:
                self._fail(sock, RedisTimeoutError("Timeout reading from Redis"))

    def _fail(self, sock: Any, error: BaseException) -> None:
        """Close this connection once, fail every call waiting on it, and let the next command connect again."""
        if sock is not self._sock:
            return
        connection, greenlets = self._connection, self._greenlets
        self._connection = self._sock = None
        self._greenlets = []
        calls = list(self._calls)
        self._calls.clear()
        self._outgoing.clear()
        connection.disconnect()
        for call in calls:
            call.finish(error=error)
        current = gevent.getcurrent()
        for greenlet in greenlets:
            if greenlet is not current:
                greenlet.kill(block=False)

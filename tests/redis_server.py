"""A private redis-server for tests: free loopback port, temp dir, no persistence, stopped by PID.

`RedisServer` can stop and restart on the same port (the Redis-restart fault test),
and pause/resume the process (a Redis that hangs instead of refusing). The
`redis_server` fixture gives one per test module; tests flush it between uses.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

__all__ = ["RedisServer", "redis_server", "require_redis_server"]

REDIS_SERVER = shutil.which("redis-server") or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists()
                                                else None)


def free_port() -> int:
    """Ask the kernel for a free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def require_redis_server() -> str:
    """The redis-server binary, or skip the test with how to get it."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; scripts/test.sh does it)")
    return REDIS_SERVER


class RedisServer:
    """One redis-server process on 127.0.0.1:port with its data in a temporary directory."""

    def __init__(self, port: int | None = None, extra_args: tuple[str, ...] = ()) -> None:
        self.binary = require_redis_server()
        self.port = port or free_port()
        self.extra_args = extra_args
        self.dir = tempfile.mkdtemp(prefix="mcp-redis-")
        self.log_path = Path(self.dir) / "redis.log"
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """redis://127.0.0.1:PORT/0"""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> RedisServer:
        """Start redis-server and wait until it answers PING."""
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", self.dir, "--logfile", str(self.log_path), *self.extra_args]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}: {self.read_log()}")
            try:
                if self.client().ping():
                    return self
            except redis.exceptions.RedisError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer within {timeout}s: {self.read_log()}")

    def client(self) -> redis.Redis:
        """A plain (blocking) client for assertions about keys."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2, socket_connect_timeout=2,
                           protocol=2)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server by PID (SIGTERM, then SIGKILL) and wait for it."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGCONT)  # a paused server cannot act on SIGTERM
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def restart(self) -> RedisServer:
        """Stop, then start again on the same port (data is gone: no persistence)."""
        self.stop()
        return self.start()

    def pause(self) -> None:
        """Freeze the process (SIGSTOP): connections stay open but nothing answers."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """Unfreeze a paused process."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGCONT)

    def read_log(self) -> str:
        """What redis-server logged."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def cleanup(self) -> None:
        """Stop the server and remove its directory."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


@pytest.fixture(scope="module")
def redis_server():
    """A private redis-server for the tests of one module."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.cleanup()

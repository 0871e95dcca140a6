"""A private Redis with Sentinel for tests: a master, a replica and three Sentinels on free loopback ports.

Fast failover settings (down-after-milliseconds 1000, failover-timeout 3000), so a
master killed with SIGKILL is replaced by its replica within a few seconds. Every
process is stopped by PID and every temporary directory removed.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import redis

from tests.redis_server import RedisServer, free_port, require_redis_server

__all__ = ["MASTER_NAME", "RedisSentinelSet", "require_redis_sentinel"]

MASTER_NAME = "mcp-master"
REDIS_SENTINEL = shutil.which("redis-sentinel") or ("/usr/bin/redis-sentinel"
                                                    if Path("/usr/bin/redis-sentinel").exists() else None)
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 3000


def require_redis_sentinel() -> str:
    """The redis-sentinel binary, or skip the test with how to get it."""
    require_redis_server()
    if REDIS_SENTINEL is None:
        pytest.skip("redis-sentinel is not installed (apt-get install redis-sentinel; scripts/test.sh does it)")
    return REDIS_SENTINEL


class SentinelProcess:
    """One redis-sentinel on 127.0.0.1:port with its (rewritten) config in a temporary directory."""

    def __init__(self, master_port: int, quorum: int) -> None:
        self.binary = require_redis_sentinel()
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="mcp-sentinel-")
        self.log_path = Path(self.dir) / "sentinel.log"
        config = Path(self.dir) / "sentinel.conf"
        config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\nlogfile {self.log_path}\n"
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} {quorum}\n"
            f"sentinel down-after-milliseconds {MASTER_NAME} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {MASTER_NAME} {FAILOVER_TIMEOUT_MS}\n"
            f"sentinel parallel-syncs {MASTER_NAME} 1\n"
        )
        self.proc = subprocess.Popen([self.binary, str(config)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.STDOUT)

    def client(self) -> redis.Redis:
        """A plain client to this Sentinel."""
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2, socket_connect_timeout=2,
                           protocol=2, decode_responses=True)

    def cleanup(self) -> None:
        """Stop the Sentinel by PID and remove its directory."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)


class RedisSentinelSet:
    """A master, one replica and three Sentinels watching them (quorum two)."""

    def __init__(self, master_args: tuple[str, ...] = ()) -> None:
        self.master = RedisServer(extra_args=master_args)
        self.replica: RedisServer | None = None
        self.sentinels: list[SentinelProcess] = []
        self.master_args = master_args

    @property
    def addresses(self) -> str:
        """MCP_REDIS_SENTINELS for this set."""
        return ",".join(f"127.0.0.1:{sentinel.port}" for sentinel in self.sentinels)

    def start(self, timeout: float = 20.0) -> RedisSentinelSet:
        """Start the master, the replica (synced) and the Sentinels (each seeing the replica and the others)."""
        self.master.start()
        self.replica = RedisServer(extra_args=("--replicaof", "127.0.0.1", str(self.master.port))).start()
        self.sentinels = [SentinelProcess(self.master.port, quorum=2) for _ in range(3)]
        deadline = time.monotonic() + timeout
        while not self._ready():
            if time.monotonic() > deadline:
                raise RuntimeError("the Sentinel set did not come up:\n" + self.logs())
            time.sleep(0.1)
        return self

    def _ready(self) -> bool:
        """True once the replica is in sync and every Sentinel knows the replica and the two other Sentinels."""
        try:
            assert self.replica is not None
            if self.replica.client().info("replication").get("master_link_status") != "up":
                return False
            for sentinel in self.sentinels:
                client = sentinel.client()
                if len(client.sentinel_sentinels(MASTER_NAME)) < 2 or not client.sentinel_slaves(MASTER_NAME):
                    return False
            return True
        except redis.exceptions.RedisError:
            return False

    def master_port(self) -> int | None:
        """The port the Sentinels name as the master's now (None if none answers)."""
        for sentinel in self.sentinels:
            try:
                address = sentinel.client().sentinel_get_master_addr_by_name(MASTER_NAME)
            except redis.exceptions.RedisError:
                continue
            if address:
                return int(address[1])
        return None

    def kill_master(self) -> None:
        """SIGKILL the master: no goodbye to clients or replica."""
        assert self.master.proc is not None
        self.master.proc.send_signal(signal.SIGKILL)
        self.master.proc.wait(5)

    def wait_for_failover(self, timeout: float = 30.0) -> None:
        """Wait until every Sentinel names the replica master and the replica acts as one."""
        assert self.replica is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                promoted = self.replica.client().info("replication").get("role") == "master"
                named = all(int(sentinel.client().sentinel_get_master_addr_by_name(MASTER_NAME)[1])
                            == self.replica.port for sentinel in self.sentinels)
                if promoted and named:
                    return
            except redis.exceptions.RedisError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"no failover within {timeout}s:\n" + self.logs())

    def logs(self) -> str:
        """What the Sentinels logged (the end of each)."""
        return "\n".join(sentinel.log_path.read_text(errors="replace")[-2000:] for sentinel in self.sentinels
                         if sentinel.log_path.exists())

    def cleanup(self) -> None:
        """Stop every process by PID and remove every directory."""
        for sentinel in self.sentinels:
            sentinel.cleanup()
        for server in (self.replica, self.master):
            if server is not None:
                server.cleanup()

    def __enter__(self) -> RedisSentinelSet:
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

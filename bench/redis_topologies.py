"""Throwaway Redis topologies for the benchmark: one redis-server, Sentinel, or Cluster, on free loopback ports.

Each is a context manager that starts its processes, waits until they serve, gives the `MCP_REDIS_*` settings
that point our server at it (`env`), and stops every process by PID on the way out. Sentinel: a master, one
replica and three Sentinels (quorum two). Cluster: three masters, no replicas, covering all 16384 slots.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import redis

from bench.servers import RedisProcess, free_port, stop_by_pid

__all__ = ["MASTER_NAME", "TOPOLOGIES", "ClusterTopology", "SentinelTopology", "SingleTopology", "redis_topology"]

TOPOLOGIES = ("single", "sentinel", "cluster")
MASTER_NAME = "bench-master"
START_TIMEOUT_S = 30.0
# A port is free only when asked: another process may take it before redis-server binds it. Try again, a few times.
START_ATTEMPTS = 3


def client(port: int) -> redis.Redis:
    """A plain client to 127.0.0.1:port with short timeouts."""
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=2, socket_connect_timeout=2, protocol=2,
                       decode_responses=True)


def start_node(stack: ExitStack, extra_args: tuple[str, ...] = ()) -> RedisProcess:
    """Start a redis-server on the stack (stopped when it closes), on new ports if the first ones were taken."""
    for attempt in range(START_ATTEMPTS):
        node = RedisProcess(tuple(str(free_port()) if arg == "{free_port}" else arg for arg in extra_args))
        try:
            return stack.enter_context(node)
        except RuntimeError:
            if attempt == START_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def wait_until(ready, what: str, timeout: float = START_TIMEOUT_S) -> None:
    """Poll ready() (Redis errors count as not yet) until it is true or the time is up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except redis.exceptions.RedisError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} within {timeout}s")


class Topology:
    """Processes on an ExitStack: entered in order, stopped in reverse order, every one by PID."""

    name = ""

    def __init__(self) -> None:
        self.stack = ExitStack()
        self.nodes: list[RedisProcess] = []
        self.sentinels: list[SentinelProcess] = []

    @property
    def env(self) -> dict[str, str]:
        """The MCP_REDIS_* settings that point our server at this topology."""
        raise NotImplementedError

    @property
    def pids(self) -> list[int]:
        """Every process of the topology."""
        return [pid for node in self.nodes for pid in node.pids] + [pid for s in self.sentinels for pid in s.pids]

    def start(self) -> None:
        """Start the processes and wait until they serve."""
        raise NotImplementedError

    def __enter__(self) -> Topology:
        try:
            self.start()
        except BaseException:
            self.stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()


class SingleTopology(Topology):
    """One redis-server."""

    name = "single"

    @property
    def env(self) -> dict[str, str]:
        return {"MCP_REDIS_URL": self.nodes[0].url}

    def start(self) -> None:
        self.nodes = [start_node(self.stack)]


class SentinelProcess:
    """One Sentinel (redis-server --sentinel) watching the master, its config in a temporary directory."""

    def __init__(self, master_port: int, quorum: int) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="bench-sentinel-")
        self.proc: subprocess.Popen | None = None
        self.config = Path(self.dir) / "sentinel.conf"
        # Sentinel rewrites its config file as it learns the replica and the other Sentinels.
        self.config.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\nlogfile {Path(self.dir) / 'sentinel.log'}\n"
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master_port} {quorum}\n"
            f"sentinel down-after-milliseconds {MASTER_NAME} 5000\n"
        )

    @property
    def pids(self) -> list[int]:
        """The Sentinel's PID, once started."""
        return [self.proc.pid] if self.proc is not None else []

    def __enter__(self) -> SentinelProcess:
        self.proc = subprocess.Popen(["redis-server", str(self.config), "--sentinel"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc: object) -> None:
        stop_by_pid(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


def named_master_port(sentinel_port: int) -> int | None:
    """The port of the master this Sentinel names (None before it names one)."""
    address = client(sentinel_port).sentinel_get_master_addr_by_name(MASTER_NAME)
    return int(address[1]) if isinstance(address, tuple) else None


class SentinelTopology(Topology):
    """A master, one replica in sync, and three Sentinels that name the master."""

    name = "sentinel"

    @property
    def env(self) -> dict[str, str]:
        return {"MCP_REDIS_SENTINELS": ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels),
                "MCP_REDIS_SENTINEL_MASTER": MASTER_NAME}

    def start(self) -> None:
        # Without this the master waits five seconds for more replicas before the first sync.
        master = start_node(self.stack, ("--repl-diskless-sync-delay", "0"))
        replica = start_node(self.stack, ("--replicaof", "127.0.0.1", str(master.port)))
        self.nodes = [master, replica]
        self.sentinels = [self.stack.enter_context(SentinelProcess(master.port, quorum=2)) for _ in range(3)]
        wait_until(lambda: client(replica.port).info("replication").get("master_link_status") == "up",
                   "the replica did not sync")
        wait_until(lambda: all(named_master_port(s.port) == master.port for s in self.sentinels),
                   "the Sentinels did not name the master")


class ClusterTopology(Topology):
    """Three cluster-enabled redis-servers joined with redis-cli, each with its bus on a port of its own."""

    name = "cluster"

    @property
    def env(self) -> dict[str, str]:
        return {"MCP_REDIS_URL": f"redis://127.0.0.1:{self.nodes[0].port}", "MCP_REDIS_CLUSTER": "1"}

    def start(self) -> None:
        # The bus port defaults to port + 10000, which may be taken or out of range: give each its own.
        self.nodes = [start_node(self.stack, ("--cluster-enabled", "yes", "--cluster-port", "{free_port}",
                                              "--cluster-node-timeout", "5000")) for _ in range(3)]
        subprocess.run([shutil.which("redis-cli") or "redis-cli", "--cluster", "create",
                        *(f"127.0.0.1:{node.port}" for node in self.nodes), "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=START_TIMEOUT_S)
        wait_until(lambda: all(client(node.port).cluster("info").get("cluster_state") == "ok" for node in self.nodes),
                   "the cluster did not reach cluster_state:ok")


def redis_topology(name: str) -> Topology:
    """A new, not yet started topology by name (one of TOPOLOGIES)."""
    kinds: dict[str, type[Topology]] = {"single": SingleTopology, "sentinel": SentinelTopology,
                                        "cluster": ClusterTopology}
    if name not in kinds:
        raise SystemExit(f"unknown Redis topology {name!r}: choose from {', '.join(TOPOLOGIES)}")
    return kinds[name]()

"""A private Redis Cluster for tests: three masters (no replicas) on free loopback ports, made with redis-cli.

Each node's cluster bus gets its own free port (not port + 10000, which may be taken
or out of range). Every process is stopped by PID and every temporary directory removed.
"""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
import redis
from redis.cluster import RedisCluster

from tests.redis_server import RedisServer, free_port

__all__ = ["RedisClusterSet", "redis_cluster"]

REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
SLOTS = 16384


def slot_range(field: str) -> tuple[int, int]:
    """The first and last slot of a CLUSTER NODES slot field ("0-5460", or "5461" for one slot)."""
    first, _, last = field.partition("-")
    return int(first), int(last or first)


def served_slots(node: RedisServer) -> list[tuple[int, int]]:
    """The slot ranges (first, last) this node serves by its own account: the "myself" line of its CLUSTER NODES."""
    with node.client() as client:
        lines = client.execute_command("CLUSTER", "NODES").decode().splitlines()
    for fields in map(str.split, lines):
        if "myself" in fields[2].split(","):
            # Fields 8 on are its slots; "[slot->-id]" and "[slot-<-id]" are slots on their way, not served.
            return [slot_range(field) for field in fields[8:] if not field.startswith("[")]
    raise RuntimeError(f"node {node.port} has no 'myself' line in CLUSTER NODES: {lines}")


def slot_map(node: RedisServer) -> dict[tuple[int, int], tuple[str, int]]:
    """Where this node sends clients for each slot range (first, last): the master's (host, port) in its
    CLUSTER SLOTS, the map a cluster client builds from the node it asks."""
    with node.client() as client:
        ranges = client.execute_command("CLUSTER", "SLOTS")
    return {(first, last): (master[0].decode(), int(master[1])) for first, last, master, *_ in ranges}


class RedisClusterSet:
    """Three cluster-enabled redis-servers joined into one cluster covering all 16384 slots."""

    def __init__(self, masters: int = 3) -> None:
        self.nodes = [self._new_node() for _ in range(masters)]

    @staticmethod
    def _new_node() -> RedisServer:
        """A cluster-enabled redis-server, not started, on two ports free just now (its own and its bus's)."""
        return RedisServer(extra_args=("--cluster-enabled", "yes", "--cluster-port", str(free_port()),
                                       "--cluster-node-timeout", "2000"))

    def _start_node(self, index: int, attempts: int = 3) -> None:
        """Start one node; if a port it was given was taken meanwhile (a free port is free only when asked, and
        any outgoing connection may take it next), start a new node on other ports instead."""
        for attempt in range(attempts):
            if attempt:
                self.nodes[index].cleanup()
                self.nodes[index] = self._new_node()
            try:
                self.nodes[index].start()
                return
            except RuntimeError as failure:
                if "Address already in use" not in str(failure) or attempt == attempts - 1:
                    raise

    @property
    def url(self) -> str:
        """MCP_REDIS_URL: any one node (the first)."""
        return f"redis://127.0.0.1:{self.nodes[0].port}"

    def start(self, timeout: float = 30.0) -> RedisClusterSet:
        """Start the nodes, join them with redis-cli --cluster create, wait until every node says ok."""
        for index in range(len(self.nodes)):
            self._start_node(index)
        subprocess.run([REDIS_CLI, "--cluster", "create", *(f"127.0.0.1:{node.port}" for node in self.nodes),
                        "--cluster-yes"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                       timeout=timeout)
        deadline = time.monotonic() + timeout
        while not (all(self._ok(node) for node in self.nodes) and self._slot_maps_agree()):
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster did not reach cluster_state:ok with every node's CLUSTER SLOTS "
                                   "naming each master's own slots at its own port")
            time.sleep(0.1)
        return self

    @staticmethod
    def _ok(node: RedisServer) -> bool:
        """True when this node sees the whole cluster as ok."""
        try:
            return node.client().cluster("info").get("cluster_state") == "ok"
        except redis.exceptions.RedisError:
            return False

    def _slot_maps_agree(self) -> bool:
        """True when every node's CLUSTER SLOTS gives each master's own slots, all 16384, at that master's port.

        cluster_state:ok says every slot has a master somewhere, not that each node's map names every master at
        the port a client must use; and a cluster client builds its map from the one node it asks.
        """
        try:
            served = {node.port: served_slots(node) for node in self.nodes}
            truth = {slots: ("127.0.0.1", port) for port, ranges in served.items() for slots in ranges}
            if not all(served.values()) or sum(last - first + 1 for first, last in truth) != SLOTS:
                return False
            return all(slot_map(node) == truth for node in self.nodes)
        except redis.exceptions.RedisError:
            return False

    def master_port_of(self, key: str) -> int:
        """The port of the master that holds key, as the nodes themselves say, not a cluster client's slot cache."""
        with self.nodes[0].client() as client:
            slot = int(client.execute_command("CLUSTER", "KEYSLOT", key))
        owners = [node.port for node in self.nodes
                  if any(first <= slot <= last for first, last in served_slots(node))]
        if len(owners) != 1:
            raise RuntimeError(f"slot {slot} of {key!r} is served by {owners or 'no node'}, not by one master")
        return owners[0]

    def client(self) -> RedisCluster:
        """A plain cluster client for assertions about keys."""
        return RedisCluster.from_url(self.url, socket_timeout=2, socket_connect_timeout=2, protocol=2)

    def flush(self) -> None:
        """Empty every node (between tests)."""
        for node in self.nodes:
            node.client().flushall()

    def cleanup(self) -> None:
        """Stop every node by PID and remove its directory."""
        for node in self.nodes:
            node.cleanup()

    def __enter__(self) -> RedisClusterSet:
        try:
            return self.start()
        except BaseException:
            self.cleanup()
            raise

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


@pytest.fixture(scope="session")
def redis_cluster():
    """A private three-master Redis Cluster for the test run (about two seconds to make; tests flush it)."""
    cluster = RedisClusterSet()
    with cluster:
        yield cluster

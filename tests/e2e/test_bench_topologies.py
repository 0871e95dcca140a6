"""The benchmark's Redis topologies (Sentinel, Cluster) start, serve our server, and leave no process behind.

A smoke test only: a second of load on each, no numbers asserted beyond "answers, no errors".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import redis

from bench.redis_topologies import redis_topology
from tests.e2e.server_process import ROOT
from tests.redis_server import require_redis_server

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def redis_binaries() -> None:
    """Skip without redis-server (Sentinel runs as redis-server --sentinel) or redis-cli (it makes the cluster)."""
    require_redis_server()
    if shutil.which("redis-cli") is None:
        pytest.skip("redis-cli is not installed (apt-get install redis-tools; scripts/test.sh does it)")


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize(("name", "processes", "settings"), [
    ("sentinel", 5, {"MCP_REDIS_SENTINELS", "MCP_REDIS_SENTINEL_MASTER"}),
    ("cluster", 3, {"MCP_REDIS_URL", "MCP_REDIS_CLUSTER"}),
])
def test_bench_topology_serves_then_stops_every_process_by_pid(name, processes, settings):
    with redis_topology(name) as topology:
        pids = topology.pids
        assert len(pids) == processes and all(alive(pid) for pid in pids)
        assert set(topology.env) == settings
        node = redis.Redis(host="127.0.0.1", port=topology.nodes[0].port, socket_timeout=2, protocol=2)
        assert node.ping()
    assert not any(alive(pid) for pid in pids)
    assert not any(os.path.exists(process.dir) for process in [*topology.nodes, *topology.sentinels])


def test_compare_over_sentinel_and_cluster_gets_answers_without_errors():
    done = subprocess.run(
        [sys.executable, "-m", "bench.load", "--compare", "--servers", "ours", "--transports", "streamable",
         "--redis-topology", "sentinel,cluster", "--concurrency", "2", "--duration", "1", "--warmup", "0.2",
         "--rounds", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    for topology in ("sentinel", "cluster"):
        result = report["results"][f"ours-redis-{topology}/streamable"]
        assert result["req_per_s"] > 0 and result["errors"] == {}, result
        assert report["ratios"][f"streamable_redis_{topology}_vs_memory"] > 0
        assert report["ratios"][f"streamable_redis_{topology}_cpu_per_call_vs_memory"] > 0
        assert len(report["topology_round_ratios"][f"streamable_redis_{topology}_vs_memory"]) == 1
    assert report["results"]["ours/streamable"]["errors"] == {}

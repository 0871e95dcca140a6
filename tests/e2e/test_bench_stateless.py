"""The load generator's 2026-07-28 wire (`--transport stateless`): against the SDK's MCPServer, and against ours.

Smoke tests only: a second of load, no numbers asserted beyond "some calls, no errors". The SDK peer proves
the generator's requests are a real 2026-07-28 client's; ours proves our stateless wire carries the bench row.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.servers import sdk_server, wsgi_floor_server
from tests.e2e.server_process import ROOT

pytestmark = pytest.mark.e2e


def run_stateless_load(url: str, pid: int) -> dict:
    """A one-second stateless load of two sessions against url; the JSON report."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.load", "--url", url, "--transport", "stateless", "--concurrency", "2",
         "--duration", "1", "--warmup", "0.2", "--server-pid", str(pid)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    return json.loads(line)


def assert_clean_run(report: dict, url: str) -> None:
    """Both sessions opened (discover answered), calls were made, nothing failed."""
    assert report["transport"] == "stateless"
    assert report["url"] == url
    assert report["errors"] == {}
    assert report["sessions"] == 2
    assert report["calls"] > 0 and report["req_per_s"] > 0
    assert report["server_cpu_us_per_call"] >= 0


def test_stateless_load_runs_against_the_sdk_mcpserver():
    with sdk_server("stateless") as peer:
        url = peer.base_url + peer.paths["stateless"]
        assert_clean_run(run_stateless_load(url, peer.pids[0]), url)


def test_stateless_load_runs_against_our_server(server):
    [worker] = server.worker_pids()
    assert_clean_run(run_stateless_load(server.url, worker), server.url)


def test_stateless_load_runs_against_the_wsgi_floor():
    with wsgi_floor_server() as floor:
        url = floor.base_url + floor.paths["stateless"]
        assert_clean_run(run_stateless_load(url, floor.pids[0]), url)

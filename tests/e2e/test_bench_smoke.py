"""The load generator runs against the real server and prints one JSON line of the promised shape.

A smoke test only: a second of load, no numbers asserted beyond "some calls, no errors".
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.e2e.server_process import ROOT

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("transport", ["sse", "streamable"])
def test_load_generator_prints_one_json_line_with_throughput_latency_and_errors(server, transport):
    [worker] = server.worker_pids()
    done = subprocess.run(
        [sys.executable, "-m", "bench.load", "--url", server.url, "--transport", transport, "--concurrency", "2",
         "--duration", "1", "--warmup", "0.2", "--server-pid", str(worker)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    report = json.loads(lines[0])
    assert report["transport"] == transport
    assert report["url"] == server.url
    assert report["sessions"] == 2
    assert report["calls"] > 0 and report["req_per_s"] > 0
    assert set(report["latency_ms"]) == {"p50", "p90", "p99"}
    assert 0 < report["latency_ms"]["p50"] <= report["latency_ms"]["p90"] <= report["latency_ms"]["p99"]
    assert report["errors"] == {}
    assert report["server_cpu_us_per_call"] >= 0


def test_the_floor_comparison_pairs_ours_with_the_wsgi_floor_on_both_wires_in_one_json_line():
    done = subprocess.run(
        [sys.executable, "-m", "bench.load", "--floor", "--rounds", "1", "--concurrency", "2", "--duration", "0.5",
         "--warmup", "0.2"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    report = json.loads(line)
    assert report["mode"] == "floor" and report["rounds"] == 1
    for wire in ("stateless", "streamable"):
        row = report["wires"][wire]
        assert row["errors"] == {"ours": {}, "floor": {}}
        assert row["ours_cpu_us_per_call"] > 0 and row["floor_cpu_us_per_call"] > 0
        assert row["round_ratios"] == [row["ratio"]] and row["spread"] == [row["ratio"], row["ratio"]]
    assert "round 1 streamable  floor" in done.stderr

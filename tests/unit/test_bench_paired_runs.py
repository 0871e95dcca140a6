"""The benchmark's paired runs of a change against the commit before it (--base-tree): ratios and refusals."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("aiohttp", reason="bench/ needs requirements-dev.txt (the other Pythons' runs install less)")

from bench.compare import paired_ratios, paired_round_ratios, server_factories  # noqa: E402


def row(req_per_s: float, cpu_us: float) -> dict:
    return {"req_per_s": req_per_s, "cpu_us_per_call": cpu_us, "server_cpu_us_per_call": cpu_us}


def test_each_hub_and_transport_is_compared_with_its_own_base_side():
    summary = {"ours/sse": row(1100, 550), "base/sse": row(1000, 500),
               "ours-redis/streamable": row(900, 800), "base-redis/streamable": row(1000, 1000)}
    assert paired_ratios(summary) == {
        "sse_memory_throughput_vs_base": 1.1, "sse_memory_cpu_per_call_vs_base": 1.1,
        "streamable_redis_throughput_vs_base": 0.9, "streamable_redis_cpu_per_call_vs_base": 0.8}


def test_the_spread_is_each_rounds_own_pair():
    runs = {"ours/sse": [row(1, 100), row(1, 300)], "base/sse": [row(1, 200), row(1, 150)]}
    assert paired_round_ratios(runs) == {"sse_memory_cpu_per_call_vs_base": [0.5, 2.0]}


def test_a_base_server_without_a_base_tree_is_refused_by_name():
    args = SimpleNamespace(server_env=[], base_tree=None, redis_url=None)
    with pytest.raises(SystemExit, match="base-redis.*--base-tree"):
        list(server_factories(["base-redis"], "sse", args))

"""The benchmark's arithmetic: percentiles, the summary line, URL splitting, profile folding."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("aiohttp", reason="bench/ needs requirements-dev.txt (the other Pythons' runs install less)")

from bench.compare import ratios_of  # noqa: E402
from bench.generator import percentile, summarize  # noqa: E402
from bench.load import split_url  # noqa: E402
from bench.profile import module_of, summarize_modules, summarize_stacks, under  # noqa: E402


def test_percentile_is_nearest_rank():
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 0.50) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([], 0.5) == 0.0


def test_summary_reports_throughput_latency_in_ms_and_errors_by_kind():
    report = summarize([0.001, 0.002, 0.003, 0.004], Counter({"timeout": 2, "http_404": 1}), 2.0)
    assert report["calls"] == 4
    assert report["req_per_s"] == 2.0
    assert report["latency_ms"] == {"p50": 2.0, "p90": 4.0, "p99": 4.0}
    assert report["errors"] == {"http_404": 1, "timeout": 2}


def test_split_url_keeps_the_path_for_the_chosen_transport():
    assert split_url("http://127.0.0.1:8000/mcp", "sse") == ("http://127.0.0.1:8000", {"sse": "/mcp"})
    assert split_url("http://127.0.0.1:8000", "streamable") == ("http://127.0.0.1:8000", {})


def test_profile_summary_counts_self_and_inclusive_samples():
    stacks = [(["main (app.py)", "work (server.py)"], 3), (["main (app.py)", "log (logs.py)"], 1)]
    total, own, inclusive = summarize_stacks(stacks)
    assert total == 4
    assert own == Counter({"work (server.py)": 3, "log (logs.py)": 1})
    assert inclusive["main (app.py)"] == 4


def test_profile_frames_fold_into_their_modules_and_can_be_cut_to_one_functions_samples():
    assert module_of("Request.parse (gunicorn/http/message.py)") == "gunicorn.http.message"
    assert module_of("Logger.info (logging/__init__.py)") == "logging"
    assert module_of("<lambda> (<string>)") == "<string>"
    own = Counter({"Logger.info (logging/__init__.py)": 2, "emit (logging/__init__.py)": 3,
                   "send (gevent/_socket.py)": 4})
    assert summarize_modules(own) == [
        ("logging", 5, [("emit (logging/__init__.py)", 3), ("Logger.info (logging/__init__.py)", 2)]),
        ("gevent._socket", 4, [("send (gevent/_socket.py)", 4)])]
    stacks = [(["main (app.py)", "log_call (d.py)", "info (l.py)"], 2), (["main (app.py)", "send (s.py)"], 5)]
    assert under(stacks, "log_call") == [(["log_call (d.py)", "info (l.py)"], 2)]


def test_the_wsgi_floor_is_compared_with_ours_and_with_the_sdk():
    summary = {"ours/stateless": {"req_per_s": 1500.0, "p99_ms": 40.0, "cpu_us_per_call": 600.0},
               "sdk/stateless": {"req_per_s": 700.0, "p99_ms": 100.0, "cpu_us_per_call": 1500.0},
               "wsgi/stateless": {"req_per_s": 2000.0, "p99_ms": 30.0, "cpu_us_per_call": 300.0}}
    ratios = ratios_of(summary)
    assert ratios["stateless_cpu_per_call_vs_wsgi"] == 2.0
    assert ratios["wsgi_floor_cpu_per_call_vs_sdk"] == 0.2
    assert ratios["stateless_cpu_per_call_vs_sdk"] == 0.4

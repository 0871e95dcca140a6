"""/metrics under the real gunicorn: multiprocess files, counts from real sessions, dead workers forgotten."""

from __future__ import annotations

import os
import signal

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.raw_clients import LegacyStream, StreamableSession, call_tool, client
from tests.e2e.server_process import ServerProcess
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

WAIT_S = 20.0


def scrape(base_url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample /metrics serves, keyed by name and sorted labels."""
    response = httpx.get(base_url + "/metrics", timeout=10.0)
    assert response.status_code == 200
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def sample(samples: dict, name: str, **labels: str) -> float:
    """One sample's value, 0.0 when absent."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="module")
def metrics_server(tmp_path_factory):
    """A server whose metrics directory the test chose, with a stale file from an 'earlier run' in it."""
    directory = tmp_path_factory.mktemp("prometheus")
    (directory / "counter_999999.db").write_bytes(b"left over from an earlier run")
    with ServerProcess(env={"PROMETHEUS_MULTIPROC_DIR": str(directory)}) as server:
        yield server, directory


def test_start_clears_stale_values_and_the_worker_writes_its_own(metrics_server):
    server, directory = metrics_server
    assert not (directory / "counter_999999.db").exists()
    with client() as http:
        StreamableSession(http, server.url)
    [worker] = server.worker_pids()
    assert any(path.name.endswith(f"_{worker}.db") for path in directory.iterdir())


def test_tool_calls_over_legacy_sse_are_counted_and_timed(metrics_server):
    server, _ = metrics_server
    before = scrape(server.base_url)
    with client() as http, LegacyStream(http, server.base_url) as stream:
        stream.open()
        for index in range(5):
            answer = stream.call(call_tool("echo", {"text": f"n{index}"}))
            assert answer["result"]["content"][0]["text"] == f"n{index}"
        during = scrape(server.base_url)
    key = {"method": "tools/call", "outcome": "ok", "code": ""}
    assert sample(during, "mcp_requests_total", **key) - sample(before, "mcp_requests_total", **key) == 5
    assert (sample(during, "mcp_tool_call_duration_seconds_count")
            - sample(before, "mcp_tool_call_duration_seconds_count")) == 5
    assert (sample(during, "mcp_sessions_opened_total", transport="sse")
            - sample(before, "mcp_sessions_opened_total", transport="sse")) == 1
    assert sample(during, "mcp_open_streams", kind="legacy") == sample(before, "mcp_open_streams", kind="legacy") + 1
    assert sample(during, "mcp_sessions") >= 1


def test_errors_are_counted_with_their_json_rpc_code(metrics_server):
    server, _ = metrics_server
    key = {"method": "tools/call", "outcome": "error", "code": "-32602"}
    before = sample(scrape(server.base_url), "mcp_requests_total", **key)
    with client() as http:
        session = StreamableSession(http, server.url)
        answer = session.call(call_tool("no-such-tool", {}))
    assert answer["error"]["code"] == -32602
    assert sample(scrape(server.base_url), "mcp_requests_total", **key) == before + 1


def test_a_killed_worker_leaves_no_open_streams_behind_but_keeps_its_counts(metrics_server):
    server, _ = metrics_server
    [worker] = server.worker_pids()
    stream_context = client()
    stream = LegacyStream(stream_context, server.base_url)
    stream.open()
    stream.call(call_tool("echo", {"text": "before the crash"}))
    before = scrape(server.base_url)
    assert sample(before, "mcp_open_streams", kind="legacy") >= 1
    calls = sample(before, "mcp_requests_total", method="tools/call", outcome="ok", code="")

    os.kill(worker, signal.SIGKILL)
    wait_until(lambda: server.worker_pids() not in ([], [worker]), timeout=WAIT_S,
               what="gunicorn to start a new worker", interval=0.1)
    wait_until(lambda: httpx.get(server.base_url + "/healthz", timeout=2.0).status_code == 200, timeout=WAIT_S,
               what="the new worker", interval=0.1)
    stream.close()
    stream_context.close()

    after = scrape(server.base_url)
    assert sample(after, "mcp_open_streams", kind="legacy") == 0
    assert sample(after, "mcp_requests_total", method="tools/call", outcome="ok", code="") == calls

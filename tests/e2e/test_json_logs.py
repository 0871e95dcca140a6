"""MCP_LOG_FORMAT=json under the real gunicorn: every line is JSON, gunicorn's own included, across a reload."""

from __future__ import annotations

import json
import signal
import time

import httpx
import pytest

from tests.e2e.raw_clients import StreamableSession, call_tool, client
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e

WAIT_S = 20.0


def wait_for_new_worker(server: ServerProcess, old: list[int]) -> None:
    """Poll until gunicorn has replaced the old workers and the new one answers."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        workers = server.worker_pids()
        if workers and not set(workers) & set(old):
            try:
                if httpx.get(server.base_url + "/healthz", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
        time.sleep(0.1)
    raise AssertionError("gunicorn did not replace its worker after SIGHUP")


def test_json_log_format_makes_every_line_json_before_and_after_a_graceful_reload():
    with ServerProcess(env={"MCP_LOG_FORMAT": "json"}) as server:
        old = server.worker_pids()
        server.proc.send_signal(signal.SIGHUP)
        wait_for_new_worker(server, old)
        with client() as http:
            session = StreamableSession(http, server.url)
            assert session.call(call_tool("echo", {"text": "logged"}))["result"]["content"][0]["text"] == "logged"
        server.stop()
        lines = [line for line in server.read_log().splitlines() if line.strip()]
    entries = [json.loads(line) for line in lines]  # fails on the first line that is not JSON
    loggers = {entry["logger"] for entry in entries}
    assert {"gunicorn.error", "mcp.rpc"} <= loggers
    assert any(e["message"] == "Hang up: Master" for e in entries)
    [call] = [e for e in entries if e["logger"] == "mcp.rpc" and "method=tools/call" in e["message"]]
    assert call["level"] == "info" and "status=ok" in call["message"]
    assert call["pid"] not in old  # logged by the worker that replaced the old one

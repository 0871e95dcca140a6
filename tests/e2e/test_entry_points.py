"""The ways to start the server: gunicorn binding from MCP_BIND (a --bind wins), and `python app.py`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from tests.e2e.raw_clients import READ_TIMEOUT_S, StreamableSession, call_tool
from tests.e2e.server_process import GUNICORN, ROOT, free_port

pytestmark = pytest.mark.e2e


def wait_for_health(port: int, process: subprocess.Popen, timeout: float = 30.0) -> None:
    """Poll /healthz on port until it answers, failing if the process dies first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stdout.read().decode(errors="replace") if process.stdout else ""
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    pytest.fail(f"nothing answered on port {port} within {timeout} s")


def refuses_connections(port: int) -> bool:
    """True when nothing listens on 127.0.0.1:port."""
    try:
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0)
    except httpx.ConnectError:
        return True
    return False


def stop(process: subprocess.Popen) -> int:
    """SIGTERM the process and return its exit code (SIGKILL after a generous wait)."""
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait(5)


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    """Start a server process from the repository root with its output captured."""
    return subprocess.Popen(args, cwd=ROOT, env={**os.environ, **env}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def test_gunicorn_binds_where_mcp_bind_says():
    port = free_port()
    process = start([GUNICORN, "-c", "gunicorn.conf.py", "wsgi:app"], {"MCP_BIND": f"127.0.0.1:{port}"})
    try:
        wait_for_health(port, process)
    finally:
        assert stop(process) == 0


def test_a_command_line_bind_overrides_mcp_bind():
    from_env, from_cli = free_port(), free_port()
    process = start([GUNICORN, "-c", "gunicorn.conf.py", "--bind", f"127.0.0.1:{from_cli}", "wsgi:app"],
                    {"MCP_BIND": f"127.0.0.1:{from_env}"})
    try:
        wait_for_health(from_cli, process)
        assert refuses_connections(from_env)
    finally:
        assert stop(process) == 0


def test_python_app_py_serves_both_transports_for_development():
    port = free_port()
    process = start([sys.executable, "app.py", "--bind", f"127.0.0.1:{port}"], {})
    try:
        wait_for_health(port, process)
        url = f"http://127.0.0.1:{port}/mcp"
        with httpx.Client(timeout=READ_TIMEOUT_S) as http:
            session = StreamableSession(http, url, version="2025-11-25")
            answer = session.call(call_tool("add", {"a": 2, "b": 40}))
            assert answer["result"]["structuredContent"] == {"result": 42}
            with http.stream("GET", url, headers={"Accept": "text/event-stream"}) as stream:
                assert stream.status_code == 200
                first = next(stream.iter_lines())
                assert first == "event: endpoint"
                # SIGTERM with the stream still open: the stream ends and the process exits cleanly.
                assert stop(process) == 0
    finally:
        if process.poll() is None:
            stop(process)


def test_python_app_py_without_the_packages_says_in_one_line_how_to_run_it():
    # -S leaves site-packages off the path: a python without the server's packages, like a clean shell's python3.
    done = subprocess.run([sys.executable, "-S", "app.py"], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert "No module named 'gevent'" in line
    assert "scripts/serve.sh" in line and ".venv/bin/python app.py" in line

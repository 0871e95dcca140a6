"""What tasks cost a worker and Redis, measured on a real gunicorn: their notifications and what a task keeps.

A task's notifications/tasks carries a large result to no listen stream (clients read it with tasks/get), and a
task keeps only what it needs of the tools/call that made it, bounded by MCP_TASK_MAX_REQUEST_BYTES.
"""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from flask_mcp_gevent.encoding import dumps
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

VERSION = "2026-07-28"
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
PLUGINS = "tests.e2e.plugins.task_tools"
TIMEOUT_S = 30.0
MIB = 1024 * 1024
# Capabilities a client may send (under MCP_MAX_BODY_BYTES, each string under MCP_MAX_STRING_BYTES): 2.7 MB.
PADDED = {**TASKS, "elicitation": {"form": {}}, "experimental": {f"k{n}": "x" * 900_000 for n in range(3)}}


def worker_rss_kib(pid: int) -> int:
    """Resident memory of a process, in KiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE).group(1))


def peak_rss_kib(pid: int, seconds: float) -> int:
    """The highest resident memory seen over seconds (sampled every 0.1 s)."""
    deadline = time.monotonic() + seconds
    peak = worker_rss_kib(pid)
    while time.monotonic() < deadline:
        time.sleep(0.1)
        peak = max(peak, worker_rss_kib(pid))
    return peak


def request(method: str, params: dict[str, Any], capabilities: dict[str, Any] = TASKS,
            request_id: Any = 1) -> dict[str, Any]:
    """A 2026-07-28 request with its _meta."""
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {
        **params, "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION,
                            "io.modelcontextprotocol/clientCapabilities": capabilities}}}


def headers(method: str, name: str) -> dict[str, str]:
    """The headers of a 2026-07-28 POST."""
    return {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION, "Mcp-Method": method, "Mcp-Name": name}


def send(http: httpx.Client, server: ServerProcess, method: str, name: str, params: dict[str, Any],
         capabilities: dict[str, Any] = TASKS, status: int = 200) -> dict[str, Any]:
    """POST one request (expecting this HTTP status); its JSON-RPC response."""
    response = http.post(server.url, content=dumps(request(method, params, capabilities)),
                         headers=headers(method, name))
    assert response.status_code == status, response.text[:500]
    return response.json()


def start_task(http: httpx.Client, server: ServerProcess, arguments: dict[str, Any],
               capabilities: dict[str, Any] = TASKS) -> str:
    """tools/call sized_result as a task; its task id."""
    created = send(http, server, "tools/call", "sized_result", {"name": "sized_result", "arguments": arguments},
                   capabilities)["result"]
    assert created["resultType"] == "task", created
    return created["taskId"]


def status_of(http: httpx.Client, server: ServerProcess, task_id: str) -> str:
    """The task's status (tasks/get)."""
    return send(http, server, "tasks/get", task_id, {"taskId": task_id})["result"]["status"]


def until_ended(http: httpx.Client, server: ServerProcess, task_id: str) -> None:
    """Poll tasks/get until the task has ended (bounded)."""
    deadline = time.monotonic() + TIMEOUT_S
    while status_of(http, server, task_id) not in ("completed", "failed", "cancelled"):
        assert time.monotonic() < deadline, f"task {task_id} did not end within {TIMEOUT_S} s"
        time.sleep(0.25)


def unread_listen(server: ServerProcess, listen_id: int, task_ids: list[str]) -> socket.socket:
    """Open a listen stream for task_ids on a raw socket, read up to its acknowledgment, then never read again."""
    body = dumps(request("subscriptions/listen", {"notifications": {"taskIds": task_ids}}, request_id=listen_id))
    head = "".join(f"{key}: {value}\r\n" for key, value in headers("subscriptions/listen", "").items()
                   if key != "Mcp-Name")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", server.port))
    sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n{head}Content-Length: {len(body)}\r\n\r\n"
                 .encode() + body)
    seen = b""
    while b"notifications/subscriptions/acknowledged" not in seen:
        chunk = sock.recv(4096)
        assert chunk, f"listen stream closed before its acknowledgment: {seen[:300]!r}"
        seen += chunk
    return sock


def test_task_results_are_not_copied_into_each_unread_listen_stream():
    env = {"MCP_PLUGINS": PLUGINS, "MCP_KEEPALIVE_S": "5", "MCP_LISTEN_MAX_TASK_IDS": "40"}
    with ServerProcess(env=env) as server, httpx.Client(timeout=TIMEOUT_S) as http:
        [worker] = server.worker_pids()
        until_ended(http, server, start_task(http, server, {"kilobytes": 200}))  # warm up the paths measured
        baseline = worker_rss_kib(worker)
        # 40 tasks of 200 KiB results (about 400 kB of JSON each), ending 0.15 s apart from 4 s on.
        task_ids = [start_task(http, server, {"kilobytes": 200, "delay_ms": 4000 + 150 * n}) for n in range(40)]
        streams = [unread_listen(server, n, task_ids) for n in range(20)]
        try:
            until_ended(http, server, task_ids[-1])
            grown_mib = (peak_rss_kib(worker, 2.0) - baseline) / 1024
        finally:
            for sock in streams:
                sock.close()
        # The tasks keep their results (16 MB); a copy per stream would be 20 times that again.
        assert grown_mib < 64, f"the worker grew {grown_mib:.0f} MiB"


def test_a_task_keeps_neither_its_requests_capabilities_nor_their_bytes_in_the_worker():
    env = {"MCP_PLUGINS": PLUGINS}
    with ServerProcess(env=env) as server, httpx.Client(timeout=TIMEOUT_S) as http:
        [worker] = server.worker_pids()
        until_ended(http, server, start_task(http, server, {"kilobytes": 0}, PADDED))  # warm up
        baseline = worker_rss_kib(worker)
        task_ids = [start_task(http, server, {"kilobytes": 0}, PADDED) for _ in range(40)]
        until_ended(http, server, task_ids[-1])
        grown_mib = (worker_rss_kib(worker) - baseline) / 1024
        # 40 requests of 2.7 MB: kept whole, they would be over 100 MiB.
        assert grown_mib < 40, f"the worker grew {grown_mib:.0f} MiB"


@pytest.mark.redis
def test_a_task_key_in_redis_is_bounded_by_what_the_task_needs(redis_server):  # noqa: F811
    redis_server.client().flushdb()
    env = {"MCP_PLUGINS": PLUGINS, "MCP_REDIS_URL": redis_server.url, "MCP_TASK_MAX_REQUEST_BYTES": "65536"}
    with ServerProcess(env=env) as server, httpx.Client(timeout=TIMEOUT_S) as http:
        task_id = start_task(http, server, {"kilobytes": 1, "note": "y" * 40_000}, PADDED)
        until_ended(http, server, task_id)
        [key] = redis_server.client().keys(f"mcp:task:*:{task_id}")
        # SAMPLES 0: every field counted (by default Redis guesses a hash's size from five of them).
        used = redis_server.client().execute_command("MEMORY", "USAGE", key, "SAMPLES", "0")
        # Its arguments (40 kB), its result (2 kB of JSON) and its state: not the 2.7 MB of capabilities.
        assert used < 40_000 + 16 * 1024, f"the task's key takes {used} bytes"
        over = send(http, server, "tools/call", "sized_result",
                    {"name": "sized_result", "arguments": {"kilobytes": 1, "note": "y" * 70_000}}, status=400)
        assert (over["id"], over["error"]["code"]) == (1, -32602), over
        assert "MCP_TASK_MAX_REQUEST_BYTES" in over["error"]["message"]
        assert len(redis_server.client().keys("mcp:task:*")) == 1

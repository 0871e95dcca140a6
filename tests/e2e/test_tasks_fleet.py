"""Tasks on a fleet: two gunicorn hosts on one real Redis, a task made on one and polled on the other.

Also the two ways a worker stops: SIGKILL (no goodbye: its task fails when its short lease runs out, seen from
the other host within a bounded wait) and SIGTERM (running tasks get half of MCP_GRACEFUL_TIMEOUT_S, the rest
end failed). Leases are short here (MCP_TASK_LEASE_S=1) to keep the waits small.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from flask_mcp_gevent.tasks.runner import SHUTDOWN_MESSAGE
from tests.conformance.runner import FIXTURE_PLUGINS
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

VERSION = "2026-07-28"
CAPABILITIES = {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}
TIMEOUT_S = 10.0
LEASE_S = 1.0
# A task's end is seen within its lease plus this (a poll's interval, a slow shared machine).
SEEN_WITHIN_S = LEASE_S + 8.0


def send(server: ServerProcess, method: str, header_name: str, **params: Any) -> dict[str, Any]:
    """POST one 2026-07-28 request with its headers (Mcp-Name: the tool or the task id); return its result."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {
        **params, "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION,
                            "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}}}
    headers = {"MCP-Protocol-Version": VERSION, "Mcp-Method": method, "Mcp-Name": header_name,
               "Accept": "application/json, text/event-stream"}
    response = httpx.post(server.url, json=body, headers=headers, timeout=TIMEOUT_S)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def start_task(server: ServerProcess, seconds: float) -> str:
    """Call slow_compute on server; return the task id of its CreateTaskResult."""
    created = send(server, "tools/call", "slow_compute", name="slow_compute",
                   arguments={"seconds": seconds, "label": "fleet"})
    assert created["resultType"] == "task", created
    return created["taskId"]


def poll(server: ServerProcess, task_id: str, within: float) -> dict[str, Any]:
    """tasks/get on server until the task has ended (bounded by within seconds)."""
    deadline = time.monotonic() + within
    while True:
        task = send(server, "tasks/get", task_id, taskId=task_id)
        if task["status"] in ("completed", "failed", "cancelled") or time.monotonic() > deadline:
            return task
        time.sleep(0.1)


@pytest.fixture
def hosts(redis_server) -> Iterator[tuple[ServerProcess, ServerProcess]]:  # noqa: F811
    """Two hosts (one worker each) sharing one Redis, with short task leases."""
    redis_server.client().flushdb()
    env = {"MCP_REDIS_URL": redis_server.url, "MCP_PLUGINS": FIXTURE_PLUGINS, "MCP_TASK_LEASE_S": str(LEASE_S),
           "MCP_GRACEFUL_TIMEOUT_S": "6"}
    with ServerProcess(env=env) as first, ServerProcess(env=env) as second:
        yield first, second


def test_a_task_made_on_one_host_is_polled_to_completion_on_the_other(hosts):
    first, second = hosts
    task_id = start_task(first, 1.5)
    working = send(second, "tasks/get", task_id, taskId=task_id)
    assert working["status"] == "working"
    done = poll(second, task_id, TIMEOUT_S)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "Computed fleet after 1.5 s"
    # Renewed past its first lease while it ran (1.5 s > 1 s): not failed for want of a renewal.
    assert "statusMessage" not in done


def test_a_task_on_a_worker_killed_with_sigkill_fails_within_its_lease(hosts):
    first, second = hosts
    task_id = start_task(first, 60)
    [worker] = first.worker_pids()
    os.kill(worker, signal.SIGKILL)
    killed_at = time.monotonic()
    failed = poll(second, task_id, SEEN_WITHIN_S)
    assert failed["status"] == "failed", failed
    assert time.monotonic() - killed_at < SEEN_WITHIN_S
    assert failed["error"]["code"] == -32603
    assert "lease expired" in failed["statusMessage"]


def test_a_graceful_stop_finishes_short_tasks_and_fails_the_rest(hosts):
    first, second = hosts
    short = start_task(first, 1)
    long = start_task(first, 60)
    assert first.stop() == 0
    assert poll(second, short, TIMEOUT_S)["status"] == "completed"
    stopped = poll(second, long, TIMEOUT_S)
    assert (stopped["status"], stopped["statusMessage"]) == ("failed", SHUTDOWN_MESSAGE)


def test_a_task_answered_on_the_other_host_resumes_there_to_completion(hosts):
    first, second = hosts
    created = send(first, "tools/call", "confirm_delete", name="confirm_delete", arguments={"filename": "a.txt"})
    task_id = created["taskId"]
    deadline = time.monotonic() + TIMEOUT_S
    while (task := send(second, "tasks/get", task_id, taskId=task_id))["status"] != "input_required":
        assert time.monotonic() < deadline, task
        time.sleep(0.1)
    assert list(task["inputRequests"]) == ["confirm"]
    ack = send(second, "tasks/update", task_id, taskId=task_id,
               inputResponses={"confirm": {"action": "accept", "content": {"confirm": True}}})
    assert ack["resultType"] == "complete"
    done = poll(first, task_id, TIMEOUT_S)
    assert (done["status"], done["result"]["content"][0]["text"]) == ("completed", "Deleted a.txt")


def test_a_reload_with_hup_fails_the_old_workers_long_task_and_the_new_worker_serves(hosts):
    first, second = hosts
    [old_worker] = first.worker_pids()
    long = start_task(first, 60)
    os.kill(first.proc.pid, signal.SIGHUP)
    stopped = poll(second, long, TIMEOUT_S)
    assert (stopped["status"], stopped["statusMessage"]) == ("failed", SHUTDOWN_MESSAGE)
    deadline = time.monotonic() + TIMEOUT_S
    while first.worker_pids() in ([], [old_worker]):
        assert time.monotonic() < deadline, "no new worker after HUP"
        time.sleep(0.1)
    assert poll(first, start_task(first, 0), TIMEOUT_S)["status"] == "completed"

"""Run-time registry changes on a fleet: 3 workers on a real Redis agree on what a tool list holds.

A tool added at run time is listed and callable on every worker (and on another host);
once removed, in one call, it is gone from every worker; a worker started afterwards
serves the same list.
Requests reach each worker in turn through ServerProcess.accepting_only, and every
answer is counted.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.raw_clients import StreamableSession, call_tool, client, request
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

WORKERS = 3
PER_WORKER = 10
INVALID_PARAMS = -32602


@pytest.fixture(scope="module")
def redis_env(redis_server) -> dict[str, str]:  # noqa: F811
    """One Redis, and the tools that change the registry and tell which worker ran a call."""
    return {"MCP_REDIS_URL": redis_server.url,
            "MCP_PLUGINS": "tests.e2e.plugins.scale_tools,tests.e2e.plugins.feature_tools"}


@pytest.fixture(scope="module")
def fleet(redis_env) -> Iterator[ServerProcess]:
    """gunicorn with three workers on one Redis."""
    with ServerProcess(env=redis_env, workers=WORKERS) as server:
        yield server


@pytest.fixture
def session(fleet) -> Iterator[StreamableSession]:
    """A Streamable HTTP session on the fleet (any worker serves it)."""
    with client() as http:
        yield StreamableSession(http, fleet.url)


def change(session: StreamableSession, action: str, name: str) -> str:
    """Add or remove the run-time tool name through change_registry; return what it said."""
    answer = session.call(call_tool("change_registry", {"kind": "tool", "action": action, "name": name}))
    assert "result" in answer, answer
    return answer["result"]["content"][0]["text"]


def post(http: httpx.Client, fleet: ServerProcess, session: StreamableSession, message: dict) -> dict[str, Any]:
    """POST one request on the session through http and return its JSON answer."""
    answer = http.post(fleet.url, json=message, headers={**session.headers, "Accept": "application/json"})
    assert answer.status_code == 200, answer.text
    return answer.json()


def probe(fleet: ServerProcess, session: StreamableSession, name: str, pids: list[int]) -> dict[str, int]:
    """On each worker in turn, PER_WORKER times: list the tools and call name. Count what each answer said."""
    counts = {"sent": 0, "listed": 0, "answered": 0, "unknown": 0}
    for pid in pids:
        with fleet.accepting_only(pid), httpx.Client(timeout=httpx.Timeout(15.0, connect=5.0),
                                                     limits=httpx.Limits(max_keepalive_connections=0)) as http:
            ran_on = post(http, fleet, session, call_tool("worker_pid", {}))
            assert ran_on["result"]["content"][0]["text"] == str(pid)
            for _ in range(PER_WORKER):
                counts["sent"] += 1
                tools = post(http, fleet, session, request("tools/list"))["result"]["tools"]
                counts["listed"] += name in [tool["name"] for tool in tools]
                called = post(http, fleet, session, call_tool(name, {}))
                if "result" in called and called["result"]["content"][0]["text"] == f"{name} is here":
                    counts["answered"] += 1
                elif called.get("error", {}).get("code") == INVALID_PARAMS:
                    counts["unknown"] += 1
    return counts


def respawned_worker(fleet: ServerProcess, before: list[int], timeout: float = 30.0) -> int:
    """Wait until gunicorn has replaced a killed worker; return the new worker's pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = fleet.worker_pids()
        new = [pid for pid in pids if pid not in before]
        if len(pids) == WORKERS and new:
            return new[0]
        time.sleep(0.1)
    raise AssertionError(f"no worker replaced the killed one within {timeout} s:\n{fleet.read_log()}")


def test_a_tool_added_at_run_time_is_listed_and_called_on_every_worker(fleet, session):
    pids = fleet.worker_pids()
    assert len(pids) == WORKERS
    assert change(session, "add", "rt-everywhere") == "added tool rt-everywhere"
    counts = probe(fleet, session, "rt-everywhere", pids)
    assert counts == {"sent": WORKERS * PER_WORKER, "listed": WORKERS * PER_WORKER,
                      "answered": WORKERS * PER_WORKER, "unknown": 0}


def test_a_tool_removed_at_run_time_is_gone_from_every_worker_after_one_call(fleet, session):
    pids = fleet.worker_pids()
    everywhere = WORKERS * PER_WORKER
    assert change(session, "add", "rt-removed") == "added tool rt-removed"
    present = probe(fleet, session, "rt-removed", pids)
    assert present == {"sent": everywhere, "listed": everywhere, "answered": everywhere, "unknown": 0}
    assert change(session, "remove", "rt-removed") == "removed tool rt-removed: True"
    absent = probe(fleet, session, "rt-removed", pids)
    assert absent == {"sent": everywhere, "listed": 0, "answered": 0, "unknown": everywhere}


def test_a_worker_started_after_the_change_serves_the_current_registry(fleet, session):
    assert change(session, "add", "rt-before-respawn") == "added tool rt-before-respawn"
    assert change(session, "add", "rt-gone-before-respawn") == "added tool rt-gone-before-respawn"
    assert change(session, "remove", "rt-gone-before-respawn") == "removed tool rt-gone-before-respawn: True"
    before = fleet.worker_pids()
    os.kill(before[0], signal.SIGKILL)
    new_pid = respawned_worker(fleet, before)
    kept = probe(fleet, session, "rt-before-respawn", [new_pid])
    assert kept == {"sent": PER_WORKER, "listed": PER_WORKER, "answered": PER_WORKER, "unknown": 0}
    gone = probe(fleet, session, "rt-gone-before-respawn", [new_pid])
    assert gone == {"sent": PER_WORKER, "listed": 0, "answered": 0, "unknown": PER_WORKER}


def test_a_tool_added_on_one_host_is_listed_and_called_on_another(fleet, session, redis_env):
    with ServerProcess(env=redis_env) as other_host:
        assert change(session, "add", "rt-other-host") == "added tool rt-other-host"
        counts = probe(other_host, session, "rt-other-host", other_host.worker_pids())
        assert counts == {"sent": PER_WORKER, "listed": PER_WORKER, "answered": PER_WORKER, "unknown": 0}
        assert change(session, "remove", "rt-other-host") == "removed tool rt-other-host: True"
        counts = probe(other_host, session, "rt-other-host", other_host.worker_pids())
        assert counts == {"sent": PER_WORKER, "listed": 0, "answered": 0, "unknown": PER_WORKER}

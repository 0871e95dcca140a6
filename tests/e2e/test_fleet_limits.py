"""Per-principal and per-session limits hold across a fleet: three gunicorn workers on one Redis.

Sessions per principal (MCP_MAX_SESSIONS_PER_PRINCIPAL) and concurrent tool calls per session
(MCP_MAX_CONCURRENT_CALLS) are counted in Redis, so requests spread over every worker meet one count,
and the call slots of a worker killed mid-call come back when their leases run out.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flask_mcp_gevent.auth.api_keys import hash_key, new_key
from flask_mcp_gevent.errors import SERVER_UNAVAILABLE
from tests.e2e.raw_clients import BOTH, StreamableSession, call_tool, initialize
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

WORKERS = 3
SESSIONS_PER_PRINCIPAL = 5
CONCURRENT_CALLS = 4
VERSION = "2025-06-18"
KEYS = {name: new_key() for name in ("opener", "caller", "killer")}
# The Redis store's call lease (CALL_LEASE_S) plus room for a loaded machine.
LEASE_WAIT_S = 40.0


@pytest.fixture(scope="module")
def fleet(redis_server, tmp_path_factory) -> Iterator[ServerProcess]:  # noqa: F811
    """Three workers on one Redis, with API keys and small per-principal and per-session limits."""
    keys_file = tmp_path_factory.mktemp("fleet-limits") / "keys.json"
    keys_file.write_text(json.dumps({hash_key(key): {"principal": name, "tools": ["*"]}
                                     for name, key in KEYS.items()}))
    env = {
        "MCP_REDIS_URL": redis_server.url,
        "MCP_API_KEYS_FILE": str(keys_file),
        "MCP_PLUGINS": "tests.e2e.plugins.scale_tools",
        "MCP_MAX_SESSIONS_PER_PRINCIPAL": str(SESSIONS_PER_PRINCIPAL),
        "MCP_MAX_CONCURRENT_CALLS": str(CONCURRENT_CALLS),
    }
    with ServerProcess(env=env, workers=WORKERS) as server:
        assert len(server.worker_pids()) == WORKERS
        yield server


def http_as(name: str) -> httpx.Client:
    """A client of one test principal that opens a new connection for every request."""
    return httpx.Client(headers={"Authorization": f"Bearer {KEYS[name]}"}, timeout=httpx.Timeout(20.0, connect=5.0),
                        limits=httpx.Limits(max_keepalive_connections=0))


def error_code(answer: dict[str, Any]) -> int | None:
    """The JSON-RPC error code of an answer, None for a result."""
    return answer.get("error", {}).get("code")


def test_one_principal_holds_exactly_its_quota_of_sessions_across_workers(fleet):
    statuses: list[int] = []
    refusals: list[dict[str, Any]] = []
    with http_as("opener") as http:
        for pid in fleet.worker_pids():
            with fleet.accepting_only(pid):
                for _ in range(4):
                    answer = http.post(fleet.url, json=initialize(VERSION), headers={"Accept": BOTH})
                    statuses.append(answer.status_code)
                    if answer.status_code != 200:
                        refusals.append(answer.json())
    assert len(statuses) == 12
    assert statuses.count(200) == SESSIONS_PER_PRINCIPAL, statuses
    assert statuses.count(503) == 12 - SESSIONS_PER_PRINCIPAL, statuses
    for refusal in refusals:
        assert refusal["error"]["code"] == SERVER_UNAVAILABLE
        assert "MCP_MAX_SESSIONS_PER_PRINCIPAL" in refusal["error"]["message"]


class Caller(threading.Thread):
    """One tools/call of `hold` on its own connection; keeps the answer, or the transport error."""

    def __init__(self, session: StreamableSession, path: Path, seconds: float) -> None:
        super().__init__(daemon=True)
        self.session = session
        self.path = path
        self.seconds = seconds
        self.answer: dict[str, Any] | None = None
        self.failure: Exception | None = None

    def run(self) -> None:
        """POST the call and wait for its answer (JSON only)."""
        with http_as(self.session.principal) as http:
            try:
                reply = http.post(self.session.url, json=call_tool("hold", {"path": str(self.path),
                                                                             "seconds": self.seconds}),
                                  headers={**self.session.headers, "Accept": "application/json"})
                self.answer = reply.json()
            except httpx.HTTPError as failure:
                self.failure = failure

    def settled(self) -> bool:
        """True once the call answered or is running on a worker."""
        return self.answer is not None or self.failure is not None or self.path.exists()


def open_session(fleet: ServerProcess, principal: str) -> StreamableSession:
    """A Streamable HTTP session of principal (initialized), with the principal remembered for its callers."""
    session = StreamableSession(http_as(principal), fleet.url, VERSION)
    session.principal = principal  # type: ignore[attr-defined]
    return session


def start_calls_on(fleet: ServerProcess, pid: int, session: StreamableSession, directory: Path, count: int,
                   seconds: float) -> list[Caller]:
    """Start count calls that land on worker pid; return once each answered or runs."""
    callers = [Caller(session, directory / f"{pid}-{n}", seconds) for n in range(count)]
    with fleet.accepting_only(pid):
        for caller in callers:
            caller.start()
        deadline = time.monotonic() + 15
        while not all(caller.settled() for caller in callers) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert all(caller.settled() for caller in callers)
    return callers


def test_one_session_runs_exactly_its_limit_of_calls_across_workers(fleet, tmp_path):
    session = open_session(fleet, "caller")
    callers: list[Caller] = []
    for pid in fleet.worker_pids():
        callers += start_calls_on(fleet, pid, session, tmp_path, 4, seconds=6)
    for caller in callers:
        caller.join(30)
    answers = [caller.answer for caller in callers]
    assert all(answer is not None for answer in answers), [caller.failure for caller in callers]
    finished = [a for a in answers if "result" in a and a["result"]["content"][0]["text"] == "finished"]
    refused = [a for a in answers if error_code(a) == SERVER_UNAVAILABLE]
    assert len(answers) == 12
    assert len(finished) == CONCURRENT_CALLS, answers
    assert len(refused) == 12 - CONCURRENT_CALLS, answers
    assert all("MCP_MAX_CONCURRENT_CALLS" in a["error"]["message"] for a in refused)
    # The slots came back: the next call runs.
    assert "result" in session.call(call_tool("worker_pid", {}))


def test_call_slots_of_a_killed_worker_come_back_within_the_lease(fleet, tmp_path):
    session = open_session(fleet, "killer")
    victim, other = fleet.worker_pids()[:2]
    held = start_calls_on(fleet, victim, session, tmp_path, CONCURRENT_CALLS, seconds=60)
    assert all(caller.path.exists() for caller in held)  # all four run on the victim
    with fleet.accepting_only(other):
        refused = session.call(call_tool("worker_pid", {}))
    assert error_code(refused) == SERVER_UNAVAILABLE, refused
    os.kill(victim, signal.SIGKILL)
    deadline = time.monotonic() + LEASE_WAIT_S
    answer: dict[str, Any] = refused
    while time.monotonic() < deadline:
        try:
            answer = session.call(call_tool("worker_pid", {}))
        except (httpx.HTTPError, AssertionError):
            answer = {}
        if "result" in answer:
            break
        time.sleep(0.5)
    assert "result" in answer, answer
    assert answer["result"]["content"][0]["text"] != str(victim)

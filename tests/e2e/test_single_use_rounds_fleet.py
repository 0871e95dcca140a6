"""A final input round that works once across a fleet: ctx.consume_answers() against a real gunicorn.

Two workers share Redis; each round is sent to the worker named (the other frozen with SIGSTOP). The tool,
tests/e2e/plugins/stateless_tools.py's charge_after_confirmation, appends a line naming its worker's PID to a
file for every charge, so the test counts the effect itself. The in-memory store's bound is measured as worker RSS.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.server_process import ServerProcess
from tests.e2e.stateless_client import post, stateless_meta, stateless_request
from tests.e2e.test_redis_faults import worker_rss_kib
from tests.redis_server import redis_server  # noqa: F401  (fixture)

TOOL = "charge_after_confirmation"
PLUGINS = "tests.e2e.plugins.stateless_tools,tests.e2e.plugins.replay_tools"
CONFIRMED = {"confirm": {"action": "accept", "content": {"confirm": True}}}
CAPABILITIES = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
REPLAYS = 6
CONCURRENT = 8
TIMEOUT_S = 10.0
# Each consumed request the in-memory store records: a 16-byte id, its expiry and the map's entry (measured: ~200 B).
MAX_BYTES_PER_ID = 400


def charge(server: ServerProcess, request_id: int, **params: Any) -> httpx.Response:
    """POST one 2026-07-28 tools/call of the charging tool (5 cents) on a new connection."""
    message = stateless_request("tools/call", {"name": TOOL, "arguments": {"amount": 5}, **params}, request_id,
                             meta=stateless_meta(**CAPABILITIES))
    with httpx.Client(timeout=TIMEOUT_S) as http:
        return post(http, server.url, message)


def is_used_refusal(response: httpx.Response, request_id: int) -> bool:
    """Whether the answer is 400 with -32602 "requestState already used", for this request id."""
    body = response.json()
    error = body.get("error") or {}
    return (response.status_code == 400 and body.get("id") == request_id and error.get("code") == -32602
            and error.get("data") == {"reason": "used"})


def charges_by_worker(path: Path) -> list[int]:
    """The PID of the worker behind each charge the tool made."""
    return [int(line.split()[0]) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def fleet(redis_server, tmp_path):  # noqa: F811
    """Two workers on a fresh Redis database, and the file their charges go to."""
    redis_server.client().flushdb()
    charges = tmp_path / "charges"
    env = {"MCP_PLUGINS": PLUGINS, "MCP_REDIS_URL": redis_server.url, "MCP_TEST_CHARGE_LOG": str(charges)}
    with ServerProcess(env=env, workers=2) as server:
        yield server, charges


@pytest.mark.redis
def test_a_final_round_replayed_on_both_workers_charges_once(fleet):
    server, charges = fleet
    first, second = server.worker_pids()[:2]
    with server.accepting_only(first):
        state = charge(server, 1).json()["result"]["requestState"]
    with server.accepting_only(second):
        done = charge(server, 2, inputResponses=CONFIRMED, requestState=state).json()
    assert done["result"]["content"][0]["text"] == "charged 5", done
    for n in range(REPLAYS):
        with server.accepting_only((first, second)[n % 2]):
            replay = charge(server, 10 + n, inputResponses=CONFIRMED, requestState=state)
        assert is_used_refusal(replay, 10 + n), replay.text
    assert charges_by_worker(charges) == [second]


@pytest.mark.redis
def test_a_final_round_sent_many_times_at_once_charges_once(fleet):
    server, charges = fleet
    state = charge(server, 1).json()["result"]["requestState"]
    with ThreadPoolExecutor(CONCURRENT) as pool:
        answers = list(pool.map(lambda n: charge(server, 100 + n, inputResponses=CONFIRMED, requestState=state),
                                range(CONCURRENT)))
    charged = [a for a in answers if a.status_code == 200 and "result" in a.json()]
    assert [a.json()["result"]["content"][0]["text"] for a in charged] == ["charged 5"], [a.text for a in answers]
    assert sum(is_used_refusal(a, a.json()["id"]) for a in answers) == CONCURRENT - 1
    assert len(charges_by_worker(charges)) == 1


@pytest.mark.redis
def test_answers_without_a_request_state_are_asked_again_on_every_worker_and_charge_once(fleet):
    server, charges = fleet
    workers = server.worker_pids()[:2]
    for n in range(REPLAYS):
        with server.accepting_only(workers[n % 2]):
            asked = charge(server, 20 + n, inputResponses=CONFIRMED).json()["result"]
        assert asked["resultType"] == "input_required", asked
        assert list(asked["inputRequests"]) == ["confirm"]
    assert charges_by_worker(charges) == []
    with server.accepting_only(workers[0]):
        done = charge(server, 30, inputResponses=CONFIRMED, requestState=asked["requestState"]).json()
    assert done["result"]["content"][0]["text"] == "charged 5", done
    with server.accepting_only(workers[1]):
        assert is_used_refusal(charge(server, 31, inputResponses=CONFIRMED, requestState=asked["requestState"]), 31)
    assert charges_by_worker(charges) == [workers[0]]


def fill(server: ServerProcess, count: int, request_id: int) -> dict[str, int]:
    """Have the worker record count new consumed request ids (replay_tools.used_rounds_fill)."""
    message = stateless_request("tools/call", {"name": "used_rounds_fill", "arguments": {"count": count}}, request_id)
    with httpx.Client(timeout=60.0) as http:
        response = post(http, server.url, message)
    return response.json()["result"]["structuredContent"]


def test_the_in_memory_stores_record_of_consumed_requests_stops_growing_at_its_bound(tmp_path):
    bound = 50_000
    env = {"MCP_PLUGINS": PLUGINS, "MCP_REQUEST_STATE_USED_MAX": str(bound), "MCP_TEST_CHARGE_LOG": ""}
    with ServerProcess(env=env) as server:
        (worker,) = server.worker_pids()
        fill(server, 1, 1)  # the tool's first run allocates what every later one reuses
        baseline = worker_rss_kib(worker)
        assert fill(server, bound, 2) == {"recorded": bound - 1, "refused": 1}
        at_bound = worker_rss_kib(worker)
        assert fill(server, 2 * bound, 3) == {"recorded": 0, "refused": 2 * bound}
        past_bound = worker_rss_kib(worker)
        state = charge(server, 4).json()["result"]["requestState"]
        full = charge(server, 5, inputResponses=CONFIRMED, requestState=state).json()
    assert (at_bound - baseline) * 1024 < bound * MAX_BYTES_PER_ID, (baseline, at_bound)
    assert past_bound - at_bound < 1024, (at_bound, past_bound)  # KiB: refused ids cost nothing
    assert full["error"]["code"] == -32004 and "MCP_REQUEST_STATE_USED_MAX" in full["error"]["message"], full

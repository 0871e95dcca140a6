"""A tools/call's slot on two gunicorn workers over Redis: free before the answer is seen, given back when refused."""

# With MCP_MAX_CONCURRENT_CALLS=1 a slot counted twice, or one left behind by a call refused before it ran,
# shows as a -32004 to the session's next call; each test also checks that the session's calls set is empty after.

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from flask_mcp_gevent.auth.api_keys import hash_key, new_key
from flask_mcp_gevent.errors import INVALID_REQUEST
from flask_mcp_gevent.store.redis_keys import call_slots_key
from tests.e2e.raw_clients import BOTH, LegacyStream, StreamableSession, call_tool, request
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

ALICE_KEY = new_key()
BOB_KEY = new_key()
CALLS = 30


@pytest.fixture(scope="module")
def fleet(redis_server, tmp_path_factory) -> Iterator[ServerProcess]:  # noqa: F811
    """Two workers on one Redis, API keys for alice and bob, one tool call at a time per session."""
    keys_file = tmp_path_factory.mktemp("call-slots") / "keys.json"
    keys_file.write_text(json.dumps({hash_key(ALICE_KEY): {"principal": "alice", "tools": ["*"]},
                                     hash_key(BOB_KEY): {"principal": "bob", "tools": ["*"]}}))
    redis_server.client().flushdb()
    env = {
        "MCP_REDIS_URL": redis_server.url,
        "MCP_API_KEYS_FILE": str(keys_file),
        "MCP_PLUGINS": "tests.e2e.plugins.scale_tools",
        "MCP_MAX_CONCURRENT_CALLS": "1",
    }
    with ServerProcess(env=env, workers=2) as server:
        assert len(server.worker_pids()) == 2
        yield server


@pytest.fixture
def store(redis_server):  # noqa: F811
    """The fleet's Redis."""
    return redis_server.client()


def http_as(key: str) -> httpx.Client:
    """A client sending an API key, opening a new connection for every request (so accepting_only pins it)."""
    return httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=httpx.Timeout(20.0, connect=5.0),
                        limits=httpx.Limits(max_keepalive_connections=0))


def pid_of(answer: dict[str, Any]) -> int:
    """The worker pid a worker_pid call answered with (fails on an error answer, showing it)."""
    assert "result" in answer, answer
    return int(answer["result"]["content"][0]["text"])


def test_sequential_calls_of_a_streamable_session_on_alternating_workers_are_never_refused(fleet, store):
    pids = fleet.worker_pids()
    with http_as(ALICE_KEY) as http:
        session = StreamableSession(http, fleet.url)
        ran_on = []
        for n in range(CALLS):
            with fleet.accepting_only(pids[n % 2]):
                ran_on.append(pid_of(session.call(call_tool("worker_pid", {}))))
        assert ran_on == [pids[n % 2] for n in range(CALLS)]
        assert store.zcard(call_slots_key(session.session_id)) == 0


def test_sequential_calls_of_a_legacy_session_on_alternating_workers_are_never_refused(fleet, store):
    pids = fleet.worker_pids()
    with http_as(ALICE_KEY) as http, LegacyStream(http, fleet.base_url) as stream:
        stream.open()
        ran_on = []
        for n in range(CALLS):
            call = call_tool("worker_pid", {})
            with fleet.accepting_only(pids[n % 2]):
                posted = stream.post(call)
            assert posted.status_code == 202, (posted.status_code, posted.text)
            # The stream's worker may have been frozen meanwhile: the answer comes once it runs again.
            ran_on.append(pid_of(stream.wait_for(call["id"])))
        assert ran_on == [pids[n % 2] for n in range(CALLS)]
        assert store.zcard(call_slots_key(stream.session_id)) == 0


def test_a_call_refused_for_its_protocol_version_header_gives_its_slot_back(fleet, store):
    pid = fleet.worker_pids()[0]
    with http_as(ALICE_KEY) as http, fleet.accepting_only(pid):
        session = StreamableSession(http, fleet.url)
        assert session.post(request("ping")).status_code == 200
        refused = session.post(call_tool("worker_pid", {}), accept="application/json",
                               headers={"MCP-Protocol-Version": "1999-01-01"})
        assert refused.status_code == 400, (refused.status_code, refused.text)
        assert "MCP-Protocol-Version" in refused.json()["error"]["message"]
        assert store.zcard(call_slots_key(session.session_id)) == 0  # the 400 left no slot taken
        assert pid_of(session.call(call_tool("worker_pid", {}))) == pid


def test_a_call_before_initialize_is_refused_and_gives_its_slot_back(fleet, store):
    pid = fleet.worker_pids()[1]
    with http_as(ALICE_KEY) as http, fleet.accepting_only(pid), LegacyStream(http, fleet.base_url) as stream:
        assert stream.call(request("ping"))["result"] == {}  # allowed before initialize
        early = call_tool("worker_pid", {})
        assert stream.post(early).status_code == 202
        refusal = stream.wait_for(early["id"])
        assert refusal["error"]["code"] == INVALID_REQUEST, refusal
        assert "not initialized" in refusal["error"]["message"]
        assert store.zcard(call_slots_key(stream.session_id)) == 0
        stream.open()
        assert pid_of(stream.call(call_tool("worker_pid", {}))) == pid


def test_another_principals_call_to_a_session_gets_404_and_takes_none_of_its_slots(fleet, store):
    pid = fleet.worker_pids()[0]
    with http_as(ALICE_KEY) as alice, http_as(BOB_KEY) as bob, fleet.accepting_only(pid):
        victim = StreamableSession(alice, fleet.url)
        assert victim.post(request("ping")).status_code == 200
        with LegacyStream(alice, fleet.base_url) as legacy:
            legacy.open()
            assert legacy.call(request("ping"))["result"] == {}
            probes = {
                "streamable": bob.post(fleet.url, json=call_tool("worker_pid", {}),
                                       headers={"Accept": BOTH, **victim.headers}),
                "legacy": bob.post(legacy.endpoint, json=call_tool("worker_pid", {})),
            }
            for name, probe in probes.items():
                assert probe.status_code == 404, (name, probe.status_code, probe.text)
                assert "Unknown or expired session" in probe.json()["error"]["message"], name
            assert store.zcard(call_slots_key(victim.session_id)) == 0
            assert store.zcard(call_slots_key(legacy.session_id)) == 0
            # The owners' one-call limit is untouched: their calls run.
            assert pid_of(victim.call(call_tool("worker_pid", {}))) == pid
            assert pid_of(legacy.call(call_tool("worker_pid", {}))) == pid

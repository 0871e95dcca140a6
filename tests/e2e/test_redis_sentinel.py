"""The Redis store on Sentinel, against real processes: a master, a replica, three Sentinels and gunicorn.

Every wire works through the master the Sentinels name; then the master is killed
with SIGKILL while clients call, and the fleet follows the failover by itself. The
test counts what was sent, acknowledged and kept, and holds the promise of docs/scaling.md:
no request waits past MCP_REDIS_TIMEOUT_S (plus a margin), errors in the outage are
503 / -32004 with Retry-After, calls acknowledged with 202 are answered exactly once
(at most one repeated: the one in flight at the kill), and every session acknowledged
more than min-replicas-max-lag + 1 seconds before the kill survives it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.ha_clients import LegacyAnswers, every_wire_adds, tool_text
from tests.e2e.raw_clients import BOTH, LegacyStream, StreamableSession, call_tool, client, initialize, notification
from tests.e2e.raw_clients import request as rpc_request
from tests.e2e.server_process import ServerProcess
from tests.e2e.stateless_client import post, stateless_request
from tests.redis_sentinel import MASTER_NAME, RedisSentinelSet
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

SERVER_UNAVAILABLE = -32004
REDIS_TIMEOUT_S = 1.0
# No request may take longer than this (MCP_REDIS_TIMEOUT_S plus a generous margin for a loaded machine).
FAIL_FAST_S = REDIS_TIMEOUT_S + 4.0
# The master refuses writes when no replica acknowledged within this many seconds (min-replicas-max-lag), so a
# write it acknowledged more than MAX_LAG_S + 1 s before it died is on the replica (docs/scaling.md: a failover).
MAX_LAG_S = 2
LOAD_BEFORE_KILL_S = MAX_LAG_S + 3.0
LOAD_AFTER_RECOVERY_S = 1.0


@pytest.fixture(scope="module")
def sentinels() -> Iterator[RedisSentinelSet]:
    """A master (refusing writes without a replica in sync), a replica and three Sentinels."""
    with RedisSentinelSet(master_args=("--min-replicas-to-write", "1",
                                       "--min-replicas-max-lag", str(MAX_LAG_S))) as found:
        yield found


@pytest.fixture(scope="module")
def server(sentinels) -> Iterator[ServerProcess]:
    """gunicorn with two workers finding the master through the Sentinels."""
    env = {"MCP_REDIS_SENTINELS": sentinels.addresses, "MCP_REDIS_SENTINEL_MASTER": MASTER_NAME,
           "MCP_REDIS_TIMEOUT_S": str(REDIS_TIMEOUT_S)}
    with ServerProcess(env=env, workers=2) as process:
        yield process


def test_every_wire_works_through_the_master_the_sentinels_name(server):
    assert every_wire_adds(server.base_url, 2, 3) == ["5", "5", "5"]
    assert httpx.get(server.base_url + "/readyz").status_code == 200


class Outcomes:
    """Every request the load made: when it was answered, how long it took, and with what."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.slowest = 0.0
        self.unexpected: list[tuple[str, int, str]] = []
        self.refused: Counter[str] = Counter()

    def record(self, name: str, started: float, response: httpx.Response, ok: tuple[int, ...]) -> bool:
        """Keep one answer; True when it is a success, False for a documented outage answer (else noted)."""
        with self.lock:
            self.slowest = max(self.slowest, time.monotonic() - started)
            if response.status_code in ok:
                return True
            if response.status_code == 503 and response.headers.get("Retry-After") \
                    and response.json()["error"]["code"] == SERVER_UNAVAILABLE:
                self.refused[name] += 1
                return False
            self.unexpected.append((name, response.status_code, response.text[:200]))
            return False


def run_until(stop: threading.Event, step: Any) -> threading.Thread:
    """Call step in a loop on its own thread until stop is set (bounded by the test's own deadline)."""

    def loop() -> None:
        deadline = time.monotonic() + 60
        while not stop.is_set() and time.monotonic() < deadline:
            step()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_a_killed_master_is_followed_to_the_promoted_replica_losing_only_what_the_readme_says(sentinels, server):
    outcomes = Outcomes()
    stop = threading.Event()
    acknowledged_sessions: list[tuple[float, str]] = []  # (when acknowledged, session id)
    legacy_acknowledged: list[int] = []
    legacy_refused: list[int] = []
    streamable_ok = [0]
    stateless_ok = [0]
    url = server.base_url + "/mcp"
    with client() as http, client() as legacy_http, client() as calls_http, client() as stateless_http:
        legacy = LegacyStream(legacy_http, server.base_url)
        legacy.open()
        answers = LegacyAnswers(legacy)
        streamable = StreamableSession(calls_http, url)

        def open_session() -> None:
            started = time.monotonic()
            answer = http.post(url, json=initialize("2025-06-18"), headers={"Accept": BOTH})
            if not outcomes.record("initialize", started, answer, (200,)):
                return
            session_id = answer.headers["Mcp-Session-Id"]
            started = time.monotonic()
            done = http.post(url, json=notification("notifications/initialized"),
                             headers={"Accept": BOTH, "Mcp-Session-Id": session_id,
                                      "MCP-Protocol-Version": "2025-06-18"})
            if outcomes.record("initialized", started, done, (202,)):
                acknowledged_sessions.append((time.monotonic(), session_id))

        def legacy_call() -> None:
            message = call_tool("add", {"a": 1, "b": 1})
            started = time.monotonic()
            posted = legacy.post(message)
            (legacy_acknowledged if outcomes.record("legacy", started, posted, (202,))
             else legacy_refused).append(message["id"])

        def streamable_call() -> None:
            started = time.monotonic()
            answer = streamable.post(call_tool("add", {"a": 2, "b": 2}), accept="application/json")
            streamable_ok[0] += outcomes.record("streamable", started, answer, (200,))

        def stateless_call() -> None:
            started = time.monotonic()
            message = stateless_request("tools/call", {"name": "add", "arguments": {"a": 3, "b": 3}})
            answer = post(stateless_http, url, message)
            stateless_ok[0] += outcomes.record("stateless", started, answer, (200,))

        threads = [run_until(stop, step) for step in (open_session, legacy_call, streamable_call, stateless_call)]
        try:
            time.sleep(LOAD_BEFORE_KILL_S)
            killed_at = time.monotonic()
            sentinels.kill_master()
            sentinels.wait_for_failover()
            # The fleet recovers by itself: a new session opens again, with no restart of anything.
            assert wait_until(lambda: http.post(url, json=initialize("2025-06-18"),
                                                headers={"Accept": BOTH}).status_code == 200, timeout=20)
            recovered_at = time.monotonic()
            time.sleep(LOAD_AFTER_RECOVERY_S)
        finally:
            stop.set()
            for thread in threads:
                thread.join(FAIL_FAST_S * 2)

        assert outcomes.unexpected == []
        assert outcomes.slowest < FAIL_FAST_S, outcomes.slowest
        # Every wire works after the failover (same sessions where they survived, new ones too).
        assert tool_text(streamable.call(call_tool("add", {"a": 4, "b": 4}))) == "8"
        assert every_wire_adds(server.base_url, 5, 5) == ["10", "10", "10"]

        # Legacy calls: each one acknowledged with 202 is answered once (its answer is retried through the outage);
        # the one in flight when the master died may be stored twice (the retry finds no record of the first).
        assert wait_until(lambda: set(legacy_acknowledged) <= set(answers.answers), timeout=20)
        assert set(answers.answers) == set(legacy_acknowledged)
        repeated = sum(count - 1 for count in answers.answers.values())
        assert repeated <= 1, answers.answers

        # Sessions: which of those acknowledged before the kill are still there after it.
        before_kill = [(at, session_id) for at, session_id in acknowledged_sessions if at < killed_at]
        lost = [(at, session_id) for at, session_id in before_kill if not session_known(http, url, session_id)]
        safe_before = killed_at - (MAX_LAG_S + 1)
        assert [session_id for at, session_id in lost if at < safe_before] == []
        legacy.close()
    print(f"\nSentinel failover: outage {recovered_at - killed_at:.1f} s; sessions acknowledged before the kill "
          f"{len(before_kill)}, lost {len(lost)} (of them {sum(at >= safe_before for at, _ in lost)} in the last "
          f"{MAX_LAG_S + 1} s); legacy calls sent {len(legacy_acknowledged) + len(legacy_refused)}, acknowledged "
          f"{len(legacy_acknowledged)}, answered {len(answers.answers)}, repeated {repeated}; Streamable calls ok "
          f"{streamable_ok[0]}, stateless ok {stateless_ok[0]}, 503s {dict(outcomes.refused)}; slowest answer "
          f"{outcomes.slowest:.2f} s")


def session_known(http: httpx.Client, url: str, session_id: str) -> bool:
    """True when the fleet still knows a Streamable HTTP session (a ping answers 200, not 404)."""
    answer = http.post(url, json=rpc_request("ping"), headers={"Accept": BOTH, "Mcp-Session-Id": session_id,
                                                              "MCP-Protocol-Version": "2025-06-18"})
    assert answer.status_code in (200, 404), (answer.status_code, answer.text)
    return answer.status_code == 200

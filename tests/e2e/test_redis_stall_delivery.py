"""Every answer acknowledged with 202 arrives exactly once though Redis stalls or restarts under legacy SSE load.

Legacy sessions on two workers post pings and slow calls without pause; Redis is
frozen (SIGSTOP) for a few seconds, or restarted on the same port with persistence.
Calls that finish during the outage cannot store their answers yet: the worker
retries (MCP_DELIVERY_RETRY_S) and each answer reaches its stream once Redis is
back. Streamable HTTP initializes caught by the outage get 503 with -32004.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.e2e.raw_clients import BOTH, call_tool, initialize, request
from tests.e2e.server_process import ServerProcess
from tests.e2e.test_redis_faults import StreamReader, fresh_client, open_session, produced_response_ids
from tests.redis_server import RedisServer
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

PLUGINS = "tests.e2e.plugins.slow_tools"
SERVER_UNAVAILABLE = -32004
SESSIONS = 4
# Each session's poster stops after this many POSTs, or when the test says so.
MAX_POSTS = 400
# Long enough that calls accepted just before the outage finish during it.
CALL_MS = 400
OUTAGE_S = 3.0
PERSISTENT = ("--appendonly", "yes", "--appendfsync", "always")


class Poster(threading.Thread):
    """POSTs pings and slow calls to one legacy session, noting which were acknowledged with 202."""

    def __init__(self, base_url: str, reader: StreamReader, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url = base_url + reader.endpoint
        self.stop = stop
        self.acknowledged: list[Any] = []
        # Posts whose fate the client cannot know (the connection failed): neither counted nor forbidden.
        self.uncertain: list[Any] = []
        self.refusals: list[tuple[int, Any]] = []
        self.start()

    def run(self) -> None:
        """Post until told to stop; a refused POST must be the store's 503, and is not acknowledged."""
        with fresh_client() as http:
            for n in range(MAX_POSTS):
                if self.stop.is_set():
                    return
                message = call_tool("sleep_ms", {"ms": CALL_MS}) if n % 2 else request("ping")
                try:
                    answer = http.post(self.url, json=message)
                except httpx.HTTPError:
                    self.uncertain.append(message["id"])
                    continue
                if answer.status_code == 202:
                    self.acknowledged.append(message["id"])
                else:
                    self.refusals.append((answer.status_code, answer.json()["error"]["code"]))
                time.sleep(0.02)


class Initializer(threading.Thread):
    """Opens Streamable HTTP sessions without pause, keeping the (status, body, Retry-After) of every answer."""

    def __init__(self, url: str, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.stop = stop
        self.answers: list[tuple[int, Any, Any, str | None]] = []
        self.start()

    def run(self) -> None:
        """Post initialize until told to stop."""
        with fresh_client() as http:
            for _ in range(MAX_POSTS):
                if self.stop.is_set():
                    return
                hello = initialize("2025-06-18")
                try:
                    answer = http.post(self.url, json=hello, headers={"Accept": BOTH})
                except httpx.HTTPError:
                    continue
                self.answers.append((answer.status_code, hello["id"], answer.json(),
                                     answer.headers.get("Retry-After")))
                time.sleep(0.05)


def store_lines(log: str) -> str:
    """The server's log lines about Redis and streams, for a failure message."""
    return "\n".join(line for line in log.splitlines() if "mcp.rpc" not in line)


def first_errors(log: str, lines: int = 80) -> str:
    """The server's log from its first unhandled error (a 500 logs its traceback), else its store lines' end."""
    kept = store_lines(log).splitlines()
    start = next((n for n, line in enumerate(kept) if "unhandled error" in line), max(0, len(kept) - lines))
    return "\n".join(kept[start:start + lines])


def received(readers: list[StreamReader]) -> Counter:
    """How many times each response id arrived, over a session's stream and its resumptions."""
    return Counter(rid for reader in readers for rid in reader.response_ids())


def resume_if_dropped(base_url: str, readers: list[StreamReader]) -> None:
    """Resume a session's stream with Last-Event-ID if the latest one ended."""
    last = readers[-1]
    if last.ended.is_set():
        last_id = next((r.last_id() for r in reversed(readers) if r.last_id() is not None), None)
        readers.append(StreamReader(base_url, last.session_id, last_id))


def run_under_load(outage: Callable[[RedisServer], None], redis_args: tuple[str, ...] = ()) -> None:
    """Load a two-worker fleet, cause the outage, and count every acknowledged answer on its stream."""
    with RedisServer(extra_args=redis_args) as redis, fresh_client() as http:
        env = {"MCP_REDIS_URL": redis.url, "MCP_PLUGINS": PLUGINS, "MCP_REDIS_TIMEOUT_S": "1",
               "MCP_KEEPALIVE_S": "1"}
        with ServerProcess(env=env, workers=2) as server:
            sessions = [[open_session(server.base_url, http)] for _ in range(SESSIONS)]
            # The answers to initialize, which came before the load.
            earlier = [set(received(readers)) for readers in sessions]
            stop = threading.Event()
            posters = [Poster(server.base_url, readers[0], stop) for readers in sessions]
            initializer = Initializer(server.url, stop)
            time.sleep(1.0)
            outage(redis)
            time.sleep(1.5)  # load goes on after Redis is back (not needed for correctness)
            stop.set()
            for thread in [*posters, initializer]:
                thread.join(30)
                assert not thread.is_alive(), "a load thread did not finish"

            for readers, poster, before in zip(sessions, posters, earlier, strict=True):
                assert poster.acknowledged, "no POST was acknowledged"
                assert all(refusal == (503, SERVER_UNAVAILABLE) for refusal in poster.refusals), (
                    f"{poster.refusals}\n{first_errors(server.read_log())}")

                def complete(readers=readers, poster=poster) -> bool:
                    resume_if_dropped(server.base_url, readers)
                    return set(poster.acknowledged) <= set(received(readers))

                try:
                    wait_until(complete, timeout=40)
                except AssertionError:
                    # wait_until raises when time runs out: name what is missing, and what the servers said.
                    missing = set(poster.acknowledged) - set(received(readers))
                    stored = set(produced_response_ids(redis.client(), readers[0].session_id))
                    pytest.fail(f"acknowledged but never answered: {missing} (in the replay log: {missing & stored})"
                                f"; streams read: {len(readers)}\n{store_lines(server.read_log())}")
                # A last call on the same session: anything still on its way (a repeat) arrives before its answer.
                barrier = request("ping")
                assert http.post(server.base_url + readers[0].endpoint, json=barrier).status_code == 202
                assert wait_until(lambda readers=readers, barrier=barrier: barrier["id"] in received(readers),
                                  timeout=20)
                counts = received(readers)
                repeats = {rid: count for rid, count in counts.items() if count > 1}
                assert repeats == {}, f"answered more than once: {repeats}"
                unasked = set(counts) - set(poster.acknowledged) - set(poster.uncertain) - before - {barrier["id"]}
                assert unasked == set(), f"answers to POSTs that were refused: {unasked}"

            for status, request_id, body, retry_after in initializer.answers:
                if status == 200:
                    assert "result" in body, body
                else:
                    assert (status, body["id"], body["error"]["code"]) == (503, request_id, SERVER_UNAVAILABLE)
                    assert retry_after, body
            log = server.read_log()
            assert "Traceback" not in log
            assert "gave up storing the answer" not in log


def freeze(redis: RedisServer) -> None:
    """Freeze Redis (SIGSTOP) for OUTAGE_S, then let it go on (SIGCONT)."""
    redis.pause()
    try:
        time.sleep(OUTAGE_S)
    finally:
        redis.resume()


def restart(redis: RedisServer) -> None:
    """Stop Redis and start it again on the same port; persistence keeps the sessions."""
    redis.restart()


def test_answers_acknowledged_during_a_redis_freeze_all_arrive_once():
    run_under_load(freeze)


def test_answers_acknowledged_across_a_redis_restart_all_arrive_once():
    run_under_load(restart, PERSISTENT)


# Redis loads its data back slowly after a restart (key-load-delay, microseconds a key) and answers meanwhile.
SLOW_LOAD = ("--key-load-delay", "1000", "--loading-process-events-interval-bytes", "1024")
FILLER_KEYS = 2000


def test_posts_while_a_restarted_redis_loads_its_data_are_refused_with_503():
    with RedisServer(extra_args=SLOW_LOAD) as redis, fresh_client() as http:
        env = {"MCP_REDIS_URL": redis.url, "MCP_REDIS_TIMEOUT_S": "1"}
        with ServerProcess(env=env, workers=1) as server:
            reader = open_session(server.base_url, http)
            url = server.base_url + reader.endpoint
            admin = redis.client()
            admin.mset({f"filler:{n}": "x" * 100 for n in range(FILLER_KEYS)})
            admin.save()  # the restart loads the session back, slowly
            redis.stop()
            starting = threading.Thread(target=redis.start, daemon=True)
            starting.start()
            # (status, JSON-RPC error code) of each POST while Redis was down, then loading its data.
            answers: list[tuple[int, Any]] = []
            while starting.is_alive() and len(answers) < 2000:
                answer = http.post(url, json=request("ping"))
                answers.append((answer.status_code, answer.json()["error"]["code"] if answer.status_code != 202
                                else None))
                time.sleep(0.01)
            starting.join(30)
            assert "errorstat_LOADING" in admin.info("errorstats"), "Redis never answered LOADING"
            assert set(answers) <= {(503, SERVER_UNAVAILABLE), (202, None)}, (
                f"{Counter(answers)}\n{first_errors(server.read_log())}")
            assert (503, SERVER_UNAVAILABLE) in answers
            assert http.post(url, json=request("ping")).status_code == 202

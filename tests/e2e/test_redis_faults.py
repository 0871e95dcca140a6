"""Faults with several workers on Redis, against real processes: nothing lost, nothing repeated, nothing hangs.

A worker killed with kill -9, Redis stopped and started again (with and without
persistence), a client that stops reading, SIGTERM with calls in flight, and
sessions left idle past MCP_SESSION_TTL_S.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from flask_mcp_gevent.store.redis_keys import session_keys
from tests.e2e.raw_clients import BOTH, StreamableSession, call_tool, client, initialize, notification, request
from tests.e2e.server_process import ServerProcess
from tests.e2e.sse_client import iter_events
from tests.redis_server import RedisServer, redis_server  # noqa: F401  (fixture)
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

PLUGINS = "tests.e2e.plugins.scale_tools,tests.e2e.plugins.slow_tools"
SERVER_UNAVAILABLE = -32004
# Each request to a server whose Redis is down must be answered within this (MCP_REDIS_TIMEOUT_S is 1 here).
FAIL_FAST_S = 3.0
# Conditions here are read from other processes (HTTP, logs, Redis): poll them gently.
POLL_S = 0.1


class StreamReader(threading.Thread):
    """Reads one legacy stream in the background, keeping every message with its event id, until it ends."""

    def __init__(self, base_url: str, session_id: str | None = None, last_event_id: str | None = None) -> None:
        super().__init__(daemon=True)
        self.base_url = base_url
        self.session_id = session_id
        self.last_event_id = last_event_id
        self.messages: list[tuple[str | None, Any]] = []
        self.status: int | None = None
        self.error: Exception | None = None
        self.attached = threading.Event()
        self.ended = threading.Event()
        self.start()
        assert self.attached.wait(15), "stream did not open"
        assert self.status == 200 and self.session_id, (self.status, self.error)

    def run(self) -> None:
        """Open the stream (or resume it) and collect events until the server or the network ends it."""
        params = {"session_id": self.session_id} if self.session_id else None
        headers = {"Accept": "text/event-stream"}
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = self.last_event_id
        try:
            with httpx.Client(timeout=httpx.Timeout(60.0, connect=5.0)) as http:
                with http.stream("GET", self.base_url + "/mcp", params=params, headers=headers) as response:
                    self.status = response.status_code
                    for event in iter_events(response):
                        if event.event == "endpoint":
                            self.session_id = event.data.rsplit("=", 1)[1]
                            self.attached.set()
                        else:
                            self.messages.append((event.id, event.json()))
        except httpx.HTTPError as exc:
            self.error = exc
        finally:
            self.attached.set()
            self.ended.set()

    @property
    def endpoint(self) -> str:
        """Where this session's messages are POSTed."""
        return f"/mcp?session_id={self.session_id}"

    def response_ids(self) -> list[Any]:
        """The ids of every response received, in order, repeats included."""
        return [m["id"] for _, m in self.messages if isinstance(m, dict) and "id" in m and "method" not in m]

    def response(self, request_id: Any, timeout: float = 15.0) -> dict[str, Any]:
        """Wait for the response to request_id."""
        return wait_until(lambda: next((m for _, m in self.messages if isinstance(m, dict)
                                        and m.get("id") == request_id and "method" not in m), None), timeout,
                          f"the response to {request_id!r}", POLL_S)

    def last_id(self) -> str | None:
        """The event id of the last message received."""
        return self.messages[-1][0] if self.messages else None


def post(base_url: str, reader: StreamReader, message: Any, http: httpx.Client) -> None:
    """POST one message to a legacy session and expect 202."""
    answer = http.post(base_url + reader.endpoint, json=message)
    assert answer.status_code == 202, (answer.status_code, answer.text)


def open_session(base_url: str, http: httpx.Client) -> StreamReader:
    """Open and initialize a legacy session."""
    reader = StreamReader(base_url)
    hello = initialize("2024-11-05")
    post(base_url, reader, hello, http)
    reader.response(hello["id"])
    post(base_url, reader, notification("notifications/initialized"), http)
    return reader


def stream_owner_pid(redis_client, session_id: str) -> int | None:
    """The pid of the worker holding session_id's stream, per Redis."""
    owner = redis_client.get(session_keys(session_id).claim)
    return None if owner is None else int(owner.decode().split("-", 1)[0])


def produced_response_ids(redis_client, session_id: str) -> list[Any]:
    """The ids of every response the server produced for a session, from its replay stream in Redis."""
    entries = redis_client.xrange(session_keys(session_id).replay)
    messages = [json.loads(fields[b"d"]) for _, fields in entries]
    return [m["id"] for m in messages if isinstance(m, dict) and "id" in m and "method" not in m]


def fresh_client() -> httpx.Client:
    """A client that opens a new connection per request, so the kernel spreads requests over workers."""
    return httpx.Client(timeout=httpx.Timeout(15.0, connect=5.0), limits=httpx.Limits(max_keepalive_connections=0))


# kill -9
def test_worker_killed_mid_stream_loses_and_repeats_no_response(redis_server):  # noqa: F811
    env = {"MCP_REDIS_URL": redis_server.url, "MCP_PLUGINS": PLUGINS}
    redis_client = redis_server.client()
    with ServerProcess(env=env, workers=2) as server, fresh_client() as http:
        readers: list[StreamReader] = []
        owners: dict[str, int] = {}
        victim, survivor = server.worker_pids()
        for pid in (victim, survivor, victim, survivor):
            with server.accepting_only(pid):
                reader = open_session(server.base_url, http)
            readers.append(reader)
            owners[reader.session_id] = stream_owner_pid(redis_client, reader.session_id)
        assert list(owners.values()) == [victim, survivor, victim, survivor]

        # Calls in flight on both workers when the victim dies; their answers come after it is gone.
        for reader in readers:
            for _ in range(3):
                post(server.base_url, reader, call_tool("sleep_ms", {"ms": 1500}), http)
            post(server.base_url, reader, call_tool("echo", {"text": reader.session_id}), http)
        os.kill(victim, signal.SIGKILL)

        orphans = [r for r in readers if owners[r.session_id] == victim]
        carried_on = [r for r in readers if owners[r.session_id] == survivor]
        for reader in orphans:
            assert reader.ended.wait(10), "the dead worker's stream did not end"
        # While the orphans have no stream, more answers are produced for them; each call below
        # also outlasts every call posted earlier, so its answer marks the end of the traffic.
        barriers = {}
        for reader in readers:
            barriers[reader.session_id] = call_tool("sleep_ms", {"ms": 1700})
            post(server.base_url, reader, barriers[reader.session_id], http)
        time.sleep(0.2)  # let some answers land while nobody listens (not needed for correctness)
        resumed = {r.session_id: StreamReader(server.base_url, r.session_id, r.last_id()) for r in orphans}

        for reader in carried_on:
            reader.response(barriers[reader.session_id]["id"])
            assert not reader.ended.is_set(), "a stream on the surviving worker was dropped"
        for reader in orphans:
            resumed[reader.session_id].response(barriers[reader.session_id]["id"])

        for reader in readers:
            received = reader.response_ids()
            if reader.session_id in resumed:
                received += resumed[reader.session_id].response_ids()
            repeats = [rid for rid, count in Counter(received).items() if count > 1]
            assert repeats == [], f"session {reader.session_id[:8]} got responses twice: {repeats}"
            # Every response the server produced (the replay log holds them all) reached the client.
            assert sorted(map(str, received)) == sorted(map(str, produced_response_ids(redis_client,
                                                                                      reader.session_id)))
        for reader in resumed.values():
            assert len(reader.response_ids()) >= 1


# Redis going away
def test_redis_restart_answers_503_quickly_then_recovers_by_itself():
    with RedisServer() as redis_process, client() as http:
        env = {"MCP_REDIS_URL": redis_process.url, "MCP_REDIS_TIMEOUT_S": "1"}
        with ServerProcess(env=env, workers=2) as server:
            streamable = StreamableSession(http, server.url)
            assert httpx.get(server.base_url + "/readyz").status_code == 200

            redis_process.stop()
            # Every worker notices on its own; /readyz says so without hanging.
            for _ in range(6):
                started = time.monotonic()
                answer = httpx.get(server.base_url + "/readyz", timeout=10)
                assert time.monotonic() - started < FAIL_FAST_S
                assert answer.status_code == 503
            attempts = {
                "POST on a session": lambda: streamable.post(request("ping")),
                "POST initialize": lambda: http.post(server.url, json=initialize("2025-06-18"),
                                                     headers={"Accept": BOTH}),
                "GET new legacy stream": lambda: http.get(server.url, headers={"Accept": "text/event-stream"}),
                "GET standalone stream": lambda: http.get(server.url, headers={
                    **streamable.headers, "Accept": "text/event-stream"}),
                "DELETE": lambda: streamable.delete(),
            }
            for name, attempt in attempts.items():
                started = time.monotonic()
                answer = attempt()
                assert time.monotonic() - started < FAIL_FAST_S, name
                assert answer.status_code == 503, (name, answer.status_code, answer.text)
                error = answer.json()["error"]
                assert error["code"] == SERVER_UNAVAILABLE and "unavailable" in error["message"], name
                assert answer.headers["Retry-After"]

            redis_process.start()  # same port, empty: nothing was persisted
            assert wait_until(lambda: all(httpx.get(server.base_url + "/readyz").status_code == 200
                                          for _ in range(4)), timeout=20, interval=POLL_S)
            fresh = StreamableSession(http, server.url)
            assert fresh.call(call_tool("add", {"a": 1, "b": 1}))["result"]["content"][0]["text"] == "2"
            reader = open_session(server.base_url, http)
            ping = request("ping")
            post(server.base_url, reader, ping, http)
            assert reader.response(ping["id"])["result"] == {}
            # The old session lived only in the Redis that was lost: the client is told to start again.
            assert streamable.post(request("ping")).status_code == 404
            assert "Traceback" not in server.read_log()


def test_open_stream_carries_on_across_a_restart_of_a_persistent_redis(tmp_path):
    persistent = ("--appendonly", "yes", "--appendfsync", "always")
    with RedisServer(extra_args=persistent) as redis_process, client() as http:
        env = {"MCP_REDIS_URL": redis_process.url, "MCP_REDIS_TIMEOUT_S": "1"}
        with ServerProcess(env=env, workers=2) as server:
            reader = open_session(server.base_url, http)
            before = call_tool("echo", {"text": "before"})
            post(server.base_url, reader, before, http)
            reader.response(before["id"])
            redis_process.restart()
            after = call_tool("echo", {"text": "after"})
            assert wait_until(lambda: http.post(server.base_url + reader.endpoint, json=after).status_code == 202,
                              timeout=20, interval=POLL_S)
            # The same stream, still open, gets the answer once its worker has re-subscribed.
            assert reader.response(after["id"], timeout=20)["result"]["content"][0]["text"] == "after"
            assert not reader.ended.is_set()
            # A ping posted behind it is answered behind it: any repeat of the answer would have come first.
            marker = request("ping")
            post(server.base_url, reader, marker, http)
            reader.response(marker["id"])
            assert Counter(reader.response_ids())[after["id"]] == 1


# a client that stops reading
def worker_rss_kib(pid: int) -> int:
    """Resident memory of a process, in KiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE).group(1))


def stalled_stream(port: int) -> tuple[socket.socket, str]:
    """Open a legacy stream with a tiny receive buffer, read its endpoint event, then never read again."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
    seen = b""
    while not (found := re.search(rb"session_id=([0-9a-f]{32})", seen)):
        chunk = sock.recv(1024)
        assert chunk, "stream closed before its endpoint event"
        seen += chunk
    return sock, found.group(1).decode()


def test_stalled_client_is_cut_off_and_worker_memory_stays_bounded(redis_server):  # noqa: F811
    env = {"MCP_REDIS_URL": redis_server.url, "MCP_QUEUE_MAX": "20", "MCP_REPLAY_MAX": "20"}
    big = "x" * 200_000  # above malloc's mmap threshold, so freed memory really goes back
    with ServerProcess(env=env) as server, client() as http:
        worker = server.worker_pids()[0]
        sock, session_id = stalled_stream(server.port)
        try:
            endpoint = f"{server.base_url}/mcp?session_id={session_id}"
            assert http.post(endpoint, json=initialize("2024-11-05")).status_code == 202
            baseline = worker_rss_kib(worker)

            def flood(count: int) -> None:
                for _ in range(count):
                    assert http.post(endpoint, json=call_tool("echo", {"text": big})).status_code == 202

            flood(80)  # ~16 MB of answers: more than the socket buffers and the 20-event queue hold
            assert wait_until(lambda: "queue full (slow consumer)" in server.read_log(), timeout=20, interval=POLL_S)
            # The stream gave up its claim, so nothing more is routed to this worker for it.
            claim = session_keys(session_id).claim
            assert wait_until(lambda: redis_server.client().exists(claim) == 0, timeout=5, interval=POLL_S)
            after_cut = worker_rss_kib(worker)
            flood(80)
            after_more = worker_rss_kib(worker)
        finally:
            sock.close()
        assert after_more - after_cut < 10 * 1024, f"grew {after_more - after_cut} KiB after the cut-off"
        assert after_more - baseline < 40 * 1024, f"grew {after_more - baseline} KiB in all"
        log = server.read_log()
        assert re.search(rf"closing stream of session {session_id[:8]}: queue full \(slow consumer\)", log)


# SIGTERM
def test_sigterm_closes_streams_promptly_and_answers_calls_in_flight(redis_server):  # noqa: F811
    env = {"MCP_REDIS_URL": redis_server.url, "MCP_PLUGINS": PLUGINS, "MCP_GRACEFUL_TIMEOUT_S": "10"}
    redis_client = redis_server.client()
    server = ServerProcess(env=env, workers=2).start()
    try:
        with fresh_client() as http:
            readers = [open_session(server.base_url, http) for _ in range(4)]
            quick = {r.session_id: call_tool("sleep_ms", {"ms": 1500}) for r in readers}
            stuck = {r.session_id: call_tool("sleep_ms", {"ms": 60000}) for r in readers}
            for reader in readers:
                post(server.base_url, reader, quick[reader.session_id], http)
                post(server.base_url, reader, stuck[reader.session_id], http)
            time.sleep(0.3)  # the calls start (not needed for correctness: a call not started is not in flight)
            started = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            for reader in readers:
                assert reader.ended.wait(5), "a stream stayed open after SIGTERM"
            streams_closed = time.monotonic() - started
            code = server.proc.wait(timeout=20)
            exited = time.monotonic() - started
        assert streams_closed < 4.0, f"streams took {streams_closed:.1f}s to close"
        assert exited < 9.0, f"gunicorn took {exited:.1f}s to exit (graceful_timeout 10 s)"
        assert code == 0
        for reader in readers:
            # Every call in flight got an answer: the short one its result, the long one an error.
            entries = redis_client.xrange(session_keys(reader.session_id).replay)
            answers = {m["id"]: m for m in (json.loads(fields[b"d"]) for _, fields in entries)
                       if isinstance(m, dict) and "id" in m and "method" not in m}
            assert "result" in answers[quick[reader.session_id]["id"]]
            assert "error" in answers[stuck[reader.session_id]["id"]]
        assert "Traceback" not in server.read_log()
    finally:
        server.stop()
        os.unlink(server.log.name)


# idle sessions
@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_idle_sessions_expire_after_the_ttl(backend, redis_server):  # noqa: F811
    env = {"MCP_SESSION_TTL_S": "2"}  # long enough to count it once on a loaded machine, short enough to wait out
    if backend == "redis":
        redis_server.client().flushdb()
        env["MCP_REDIS_URL"] = redis_server.url
    with ServerProcess(env=env) as server, client() as http:
        session = StreamableSession(http, server.url)

        def session_count() -> int:
            return httpx.get(server.base_url + "/readyz").json()["sessions"]

        assert session_count() == 1
        # Counting touches no session, so waiting on the count cannot keep it alive.
        assert wait_until(lambda: session_count() == 0, timeout=10, interval=POLL_S)
        if backend == "redis":
            assert redis_server.client().keys(session_keys(session.session_id).session + "*") == []
        assert session.post(request("ping")).status_code == 404


def test_a_session_in_use_outlives_the_ttl(redis_server):  # noqa: F811
    # Pings every 0.3 s for two and a half TTLs: the margin (1.7 s a ping) absorbs a loaded machine's stalls.
    env = {"MCP_SESSION_TTL_S": "2", "MCP_REDIS_URL": redis_server.url}
    with ServerProcess(env=env) as server, client() as http:
        session = StreamableSession(http, server.url)
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            assert session.call(request("ping"))["result"] == {}
            time.sleep(0.3)

"""What a stopping gunicorn worker does with the connections and calls it holds: the pieces of a rolling restart.

Each test holds a slow call in flight so the worker stays in its graceful stop for a while (half of
MCP_GRACEFUL_TIMEOUT_S), and checks what a client sees meanwhile: its own call answered on its own POST,
new connections refused (so a balancer sends them to a host that stays), a kept-alive connection closed,
and a stream asked for on the stopping worker ended at once instead of held until graceful_timeout.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import E2E_PLUGINS
from tests.e2e.raw_clients import BOTH, LegacyStream, StreamableSession, call_tool, client
from tests.e2e.server_process import ServerProcess, wait_stopped
from tests.e2e.sse_client import iter_events

pytestmark = pytest.mark.e2e

GRACEFUL_TIMEOUT_S = 4
LONG_MS = 60000
WAIT_S = 15.0


@pytest.fixture
def server():
    """One worker, the in-memory store, the slow test tools, a four-second graceful_timeout."""
    env = {"MCP_PLUGINS": E2E_PLUGINS, "MCP_GRACEFUL_TIMEOUT_S": str(GRACEFUL_TIMEOUT_S), "MCP_KEEPALIVE_S": "1"}
    with ServerProcess(env=env) as process:
        yield process


def stop_begun(stream: LegacyStream) -> None:
    """Wait until the worker has begun to stop: it ends its open streams first (the stream's body ends)."""
    assert [event.event for event in stream.events] == []


def raw_request(port: int, head: str) -> socket.socket:
    """A connection (accepted now, while the worker still accepts) with a request head sent on it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
    sock.sendall(head.encode())
    return sock


def read_until(sock: socket.socket, marker: bytes, timeout: float) -> bytes:
    """Read until marker arrives, the peer closes, or timeout passes; return what came."""
    sock.settimeout(timeout)
    got = b""
    try:
        while marker not in got:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    except TimeoutError:
        pass
    except ConnectionResetError:
        pass  # closed, abruptly
    return got


def test_a_call_past_the_grace_is_answered_on_its_own_post_and_stream_before_the_worker_exits(server):
    with client() as http:
        session = StreamableSession(http, server.url, version="2025-11-25")
        with session.open_stream() as standalone:
            announcements = iter_events(standalone)
            outcomes: dict[str, Any] = {}

            def json_call() -> None:
                answer = session.post(call_tool("sleep_ms", {"ms": LONG_MS, "announce": True}, request_id="j"),
                                      accept="application/json")
                outcomes["json"] = (answer.status_code, answer.json())

            thread = threading.Thread(target=json_call, daemon=True)
            thread.start()
            assert next(announcements).json()["params"]["data"] == f"sleeping {LONG_MS} ms"  # it runs
            with http.stream("POST", server.url, headers={"Accept": BOTH, **session.headers},
                             json=call_tool("sleep_ms", {"ms": LONG_MS, "announce": True}, request_id="s")) as sse:
                events = (event for event in iter_events(sse) if event.data)  # past the priming event
                assert next(events).json()["method"] == "notifications/message"  # it runs
                started = time.monotonic()
                server.terminate()
                answer = next(events).json()
            thread.join(WAIT_S)
        assert answer["id"] == "s" and answer["error"]["code"] == -32004, answer
        assert "Server shutting down" in answer["error"]["message"]
        status, body = outcomes["json"]
        assert status == 200 and body["id"] == "j" and body["error"]["code"] == -32004, outcomes
    assert server.wait_exited(WAIT_S) == 0
    assert time.monotonic() - started < GRACEFUL_TIMEOUT_S, "the worker waited out its graceful_timeout"
    assert "Worker graceful timeout" not in server.read_log()


def test_a_stopping_worker_accepts_no_new_connection(server):
    with client() as http, LegacyStream(http, server.base_url, "/sse") as legacy:
        legacy.open()
        assert legacy.post(call_tool("sleep_ms", {"ms": LONG_MS})).status_code == 202  # keeps the worker stopping
        server.terminate()
        stop_begun(legacy)
        # The master has closed its listener; a worker that still accepted would take this one.
        with pytest.raises(httpx.ConnectError):
            httpx.get(server.base_url + "/healthz", timeout=WAIT_S)
    assert server.wait_exited(WAIT_S) == 0


def test_a_connection_whose_stream_ended_in_the_stop_takes_no_further_request(server):
    with client() as http, LegacyStream(http, server.base_url, "/sse") as legacy:
        legacy.open()
        assert legacy.post(call_tool("sleep_ms", {"ms": LONG_MS})).status_code == 202
        session = StreamableSession(http, server.url, version="2025-11-25")
        get = (f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAccept: text/event-stream\r\n"
               f"Mcp-Session-Id: {session.session_id}\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n")
        sock = raw_request(server.port, get)
        try:
            assert read_until(sock, b"\r\n\r\n", WAIT_S).startswith(b"HTTP/1.1 200")
            server.terminate()
            assert read_until(sock, b"0\r\n\r\n", WAIT_S).endswith(b"0\r\n\r\n")  # the stream's end
            # The client (a balancer's keep-alive pool) sends its reconnect on the same connection.
            try:
                sock.sendall(get.replace("Accept:", "Last-Event-ID: 0\r\nAccept:", 1).encode())
            except OSError:
                pass  # already closed: what the worker should do
            assert read_until(sock, b"\r\n\r\n", 2.0) == b"", "the stopping worker served a second request"
        finally:
            sock.close()
    assert server.wait_exited(WAIT_S) == 0


def test_a_stream_asked_for_on_a_stopping_worker_ends_at_once(server):
    with client() as http, LegacyStream(http, server.base_url, "/sse") as legacy:
        legacy.open()
        assert legacy.post(call_tool("sleep_ms", {"ms": LONG_MS})).status_code == 202
        session = StreamableSession(http, server.url, version="2025-11-25")
        # A kept-alive connection from before the stop (a balancer's pool); the next request comes after it.
        sock = raw_request(server.port, f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n")
        try:
            assert read_until(sock, b'"status"', WAIT_S).startswith(b"HTTP/1.1 200")
            # The worker finishes that response's bookkeeping after its last byte; a stop arriving within it would
            # rightly close this connection (the test below). Well inside gunicorn's 2 s keep-alive.
            time.sleep(0.5)
            server.terminate()
            stop_begun(legacy)
            sock.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAccept: text/event-stream\r\n"
                          f"Mcp-Session-Id: {session.session_id}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
                          "Last-Event-ID: 0\r\n\r\n").encode())
            got = read_until(sock, b"0\r\n\r\n", 2.0)
            assert got.startswith(b"HTTP/1.1 200"), got[:200]
            assert got.endswith(b"0\r\n\r\n"), "the stream was held open on the stopping worker"
        finally:
            sock.close()
    assert server.wait_exited(WAIT_S) == 0
    assert "Worker graceful timeout" not in server.read_log()


def test_connections_queued_on_the_socket_when_the_worker_stops_are_served_not_reset(server):
    (worker,) = server.worker_pids()
    healthz = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n"
    os.kill(worker, signal.SIGSTOP)
    wait_stopped(worker)
    try:
        # The kernel completes these connections, but the frozen worker cannot accept them: they queue.
        queued = [raw_request(server.port, healthz) for _ in range(5)]
        server.terminate()
        deadline = time.monotonic() + WAIT_S
        while "Handling signal: term" not in server.read_log():  # the master has closed its copy of the socket
            assert time.monotonic() < deadline, "the master never handled SIGTERM"
            time.sleep(0.02)
    finally:
        os.kill(worker, signal.SIGCONT)
    try:
        for sock in queued:
            assert read_until(sock, b'"status"', WAIT_S).startswith(b"HTTP/1.1 200"), "a queued connection was reset"
    finally:
        for sock in queued:
            sock.close()
    assert server.wait_exited(WAIT_S) == 0

"""A client that stops reading its stream is cut off: the queue is dropped and its connection closed."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.e2e.raw_clients import call_tool, initialize
from tests.e2e.server_process import ServerProcess
from tests.e2e.test_redis_faults import stalled_stream

pytestmark = pytest.mark.e2e


def open_legacy_streams(http: httpx.Client, base_url: str) -> float:
    """The mcp_open_streams gauge for legacy streams, from /metrics."""
    for line in http.get(base_url + "/metrics").text.splitlines():
        if line.startswith("mcp_open_streams") and 'kind="legacy"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def read_until_closed(sock, deadline_s: float) -> bool:
    """Drain the socket; True when the server closed it before the deadline."""
    sock.settimeout(1.0)
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            if not sock.recv(1 << 20):
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


def test_a_stalled_stream_is_cut_off_and_its_connection_closed():
    env = {"MCP_QUEUE_MAX": "10", "MCP_REPLAY_MAX": "10"}
    big = "x" * 200_000
    with ServerProcess(env=env) as server, httpx.Client(timeout=10.0) as http:
        sock, session_id = stalled_stream(server.port)
        try:
            endpoint = f"{server.base_url}/mcp?session_id={session_id}"
            assert http.post(endpoint, json=initialize("2024-11-05")).status_code == 202
            for _ in range(60):  # ~12 MB of answers: more than the socket buffers and the queue hold
                assert http.post(endpoint, json=call_tool("echo", {"text": big})).status_code == 202
            deadline = time.monotonic() + 20
            while "queue full (slow consumer)" not in server.read_log() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert f"closing stream of session {session_id[:8]}: queue full" in server.read_log()
            assert session_id not in server.read_log()  # a log line names a session by 8 characters
            # The greenlet serving the stream was blocked writing to a client that reads nothing: the server
            # shuts the socket down under it, so the stream ends although the client still has not read a byte.
            deadline = time.monotonic() + 10
            while open_legacy_streams(http, server.base_url) > 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert open_legacy_streams(http, server.base_url) == 0
            assert read_until_closed(sock, 20.0), "the server kept the stalled connection open"
        finally:
            sock.close()
        # The worker is healthy and serves others.
        assert http.get(server.base_url + "/healthz").status_code == 200

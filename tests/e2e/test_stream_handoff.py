"""Event streams the gunicorn worker takes over from their requests (stream_handoff.py), on a real gunicorn.

Once its first frame is out, a legacy or standalone stream leaves gunicorn's request loop and a greenlet of the
worker's own writes the rest. What a client and the server's bounds see must not change: the stream's events as
HTTP/1.1 chunks (raw frames to HTTP/1.0), a clean end when the worker stops, and the stream counted against
MCP_MAX_CONNECTIONS_PER_ADDRESS until it ends.
"""

from __future__ import annotations

import re
import signal
import socket
import time

import httpx
import pytest

from tests.e2e.raw_clients import BOTH, initialize, notification
from tests.e2e.server_process import ServerProcess
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

PER_ADDRESS = 2
SESSION_ID = re.compile(rb"session_id=([0-9a-f]{32})")
# A chunk carrying the initialize answer's event: its size in hex, then the event.
ANSWER_CHUNK = re.compile(rb"\r\n([0-9A-F]+)\r\n(id: [^\n]+\nevent: message\ndata: [^\n]*serverInfo[^\n]*\n\n)\r\n")
READ_TIMEOUT_S = 15.0


@pytest.fixture
def server():
    """One worker, keepalives every second (a gone client is noticed fast), two requests at once per address."""
    with ServerProcess({"MCP_KEEPALIVE_S": "1", "MCP_MAX_CONNECTIONS_PER_ADDRESS": str(PER_ADDRESS)}) as process:
        yield process


def open_stream(server: ServerProcess, version: str = "1.1") -> tuple[socket.socket, bytes, str]:
    """A legacy GET stream on a raw socket: the socket, what arrived up to the endpoint event, the session id."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT_S)
    sock.sendall(f"GET /mcp HTTP/{version}\r\nHost: 127.0.0.1:{server.port}\r\nAccept: text/event-stream\r\n\r\n"
                 .encode())
    seen = read_until(sock, b"", SESSION_ID)
    found = SESSION_ID.search(seen)
    assert found is not None
    return sock, seen, found.group(1).decode()


def read_until(sock: socket.socket, seen: bytes, pattern: re.Pattern[bytes]) -> bytes:
    """Read until pattern matches what arrived; return all read."""
    while not pattern.search(seen):
        chunk = sock.recv(65536)
        assert chunk, f"the stream ended early: {seen[-300:]!r}"
        seen += chunk
    return seen


def read_to_end(sock: socket.socket, seen: bytes) -> bytes:
    """Read until the server closes the connection; return all read."""
    while chunk := sock.recv(65536):
        seen += chunk
    return seen


def initialize_session(server: ServerProcess, session_id: str) -> None:
    """Initialize the legacy session by its endpoint (the answer goes to its stream)."""
    endpoint = f"{server.url}?session_id={session_id}"
    assert httpx.post(endpoint, json=initialize("2024-11-05", request_id=1), timeout=10).status_code == 202
    assert httpx.post(endpoint, json=notification("notifications/initialized"), timeout=10).status_code == 202


def test_the_events_after_the_first_go_out_as_http_1_1_chunks(server):
    sock, seen, session_id = open_stream(server)
    try:
        assert b"Transfer-Encoding: chunked" in seen
        initialize_session(server, session_id)
        seen = read_until(sock, seen, ANSWER_CHUNK)
        found = ANSWER_CHUNK.search(seen)
        assert found is not None and int(found[1], 16) == len(found[2])  # a chunk the size it says, the event whole
    finally:
        sock.close()


def test_to_an_http_1_0_client_the_events_go_out_as_they_are(server):
    sock, seen, session_id = open_stream(server, version="1.0")
    try:
        assert b"Transfer-Encoding" not in seen
        initialize_session(server, session_id)
        seen = read_until(sock, seen, re.compile(rb'"serverInfo".*\n\n', re.S))
        # The endpoint event, then the answer's right after it: no chunk size between them.
        assert re.search(rb"session_id=[0-9a-f]{32}\n\nid: [^\n]+\nevent: message\ndata: ", seen)
    finally:
        sock.close()


def test_a_stream_counts_for_its_address_until_it_ends(server):
    first, _, _ = open_stream(server)
    second, _, _ = open_stream(server)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": BOTH, "MCP-Protocol-Version": "2026-07-28"}
    try:
        # Both streams left gunicorn's requests long ago; the address is still at its bound.
        time.sleep(1.5)
        assert httpx.post(server.url, json=ping, headers=headers, timeout=10).status_code == 429
        first.close()
        # The worker learns at its next keepalive that the client is gone; the address is served again.
        wait_until(lambda: httpx.post(server.url, json=ping, headers=headers, timeout=10).status_code != 429,
                   timeout=15, what="the closed stream's address count released")
    finally:
        first.close()
        second.close()


def test_a_stream_ends_cleanly_at_once_when_the_worker_stops(server):
    sock, seen, session_id = open_stream(server)
    try:
        initialize_session(server, session_id)
        seen = read_until(sock, seen, re.compile(rb'"serverInfo"'))
        assert server.proc is not None
        stopped_at = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        seen = read_to_end(sock, seen)
        # The last chunk ends the body (a clean end, not a cut connection), well before graceful_timeout.
        assert seen.endswith(b"\r\n0\r\n\r\n")
        assert time.monotonic() - stopped_at < 10
    finally:
        sock.close()

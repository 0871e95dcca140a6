"""A Streamable HTTP request's own SSE stream is bounded like every stream: MCP_QUEUE_MAX_BYTES on a real gunicorn.

The client reads the stream's headers and priming event, then nothing: its raw socket has a 4 KiB receive buffer.
Memory is the worker's resident set (VmRSS).
"""

from __future__ import annotations

import json
import re
import socket

import httpx
import pytest

from tests.e2e.raw_clients import BOTH, StreamableSession, call_tool
from tests.e2e.server_process import ServerProcess
from tests.e2e.sse_client import iter_events
from tests.e2e.test_redis_faults import worker_rss_kib
from tests.e2e.test_slow_consumer import read_until_closed
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

WAIT_S = 30.0
MIB = 1024
NOTIFICATIONS = 300
CHARS = 100_000  # 300 of them: some 30 MB of notifications for a client that reads none (main grew 27 MiB, 3.9 now)
ENV = {"MCP_PLUGINS": "tests.e2e.plugins.flood_tools", "MCP_QUEUE_MAX": "100000",
       "MCP_QUEUE_MAX_BYTES": str(MIB * 1024), "MCP_REPLAY_MAX_BYTES": str(MIB * 1024)}
PRIMING = re.compile(rb"\r\n\r\n.*?id: (\S+)\nretry: \d+\n", re.DOTALL)
# The request's own log line, written when it has finished.
FLOOD_DONE = re.compile(r"rpc method=tools/call .*status=")


def post_unread(server: ServerProcess, session: StreamableSession, message: dict) -> tuple[socket.socket, str]:
    """POST message on a raw socket asking for SSE, read up to the priming event, then nothing; its socket and id."""
    body = json.dumps(message).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in {"Accept": BOTH, **session.headers}.items())
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(WAIT_S)
    sock.connect(("127.0.0.1", server.port))
    sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n{head}\r\n".encode() + body)
    seen = b""
    while not (found := PRIMING.search(seen)):
        chunk = sock.recv(4096)
        assert chunk, f"the stream ended before its priming event: {seen!r}"
        seen += chunk
    assert seen.startswith(b"HTTP/1.1 200"), seen[:200]
    return sock, found.group(1).decode()


def test_an_unread_request_stream_is_cut_off_at_the_byte_bound_and_resumes_from_the_replay():
    with ServerProcess(env=ENV) as server, httpx.Client(timeout=WAIT_S) as http:
        worker = server.worker_pids()[0]
        session = StreamableSession(http, server.url, version="2025-11-25")
        baseline = worker_rss_kib(worker)
        sock, last_event_id = post_unread(server, session, call_tool(
            "log_flood", {"count": NOTIFICATIONS, "chars": CHARS}, request_id="flood"))
        try:
            # The tool runs to its end whatever happens to its stream: then all it sent is somewhere.
            wait_until(lambda: FLOOD_DONE.search(server.read_log()), timeout=WAIT_S, what="the flood's end")
            grown = worker_rss_kib(worker) - baseline
            assert grown < 12 * MIB, f"the worker grew {grown // MIB} MiB for one unread request stream"
            assert f"closing the stream of session {session.session_id[:8]}: queue full (slow consumer)" \
                in server.read_log()
            assert read_until_closed(sock, WAIT_S), "the server kept the unread connection open"
        finally:
            sock.close()
        # What the client missed waits in the session's replay log: the stream resumes up to the tool's result.
        with session.open_stream(last_event_id=last_event_id) as resumed:
            answer = next(json.loads(event.data) for event in iter_events(resumed) if '"flood"' in event.data)
        assert answer["result"]["isError"] is False

"""What a client sends cannot shape the log: no forged lines, no raw control bytes, no whole session ids.

The server's stderr (kept by ServerProcess) is read after requests that carry a newline in
the path, NUL bytes in a URI, a method and an id, a stream cut off as a slow consumer and
a greenlet that fails.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.e2e.raw_clients import StreamableSession, call_tool, client, initialize, request
from tests.e2e.raw_http import exchange
from tests.e2e.server_process import ServerProcess
from tests.e2e.test_redis_faults import stalled_stream

pytestmark = pytest.mark.e2e

FORGED = "FORGED-LINE level=CRITICAL"
WHOLE_SESSION_ID = re.compile(r"[0-9a-f]{32}")
WAIT_S = 20.0


def test_a_newline_in_the_path_and_nul_bytes_anywhere_are_escaped_in_the_text_log(tmp_path):
    (tmp_path / "note.txt").write_text("hi")
    env = {"MCP_FILES_ROOT": str(tmp_path), "MCP_LOG_FORMAT": "text"}
    with ServerProcess(env=env) as server, client() as http:
        forged = f"GET /mcp%0a{FORGED.replace(' ', '%20')} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        assert exchange(server.port, forged.encode()).status == 404
        nul_path = b"GET /mcp%00nul HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        assert exchange(server.port, nul_path).status in (400, 404)
        session = StreamableSession(http, server.url)
        session.call(request("resources/read", {"uri": f"file://{tmp_path}/note\u0000.txt"}))
        session.call(request("no\u0000such/method"))
        session.call(request("ping", request_id="id-with-\u0000-nul"))
        server.stop()
        raw = open(server.log.name, "rb").read()
    lines = raw.decode().splitlines()
    assert not any(line.startswith("FORGED-LINE") for line in lines)
    assert any("path=/mcp\\nFORGED-LINE" in line for line in lines)
    assert b"\x00" not in raw
    assert any("method=no\\x00such/method" in line for line in lines)
    assert any("id=id-with-\\x00-nul" in line for line in lines)


def cut_off_a_slow_consumer(server: ServerProcess, http) -> str:
    """Stall a legacy stream until the server drops it as a slow consumer; return its session id."""
    sock, session_id = stalled_stream(server.port)
    try:
        endpoint = f"{server.base_url}/mcp?session_id={session_id}"
        assert http.post(endpoint, json=initialize("2024-11-05")).status_code == 202
        big = "x" * 200_000
        deadline = time.monotonic() + WAIT_S
        for _ in range(60):  # more than the socket buffers and the 10-event queue hold
            assert http.post(endpoint, json=call_tool("echo", {"text": big})).status_code == 202
        while "queue full (slow consumer)" not in server.read_log() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "queue full (slow consumer)" in server.read_log()
    finally:
        sock.close()
    return session_id


def test_json_logs_carry_greenlet_failures_and_never_a_whole_session_id():
    env = {"MCP_LOG_FORMAT": "json", "MCP_PLUGINS": "tests.e2e.plugins.failing_tools",
           "MCP_QUEUE_MAX": "10", "MCP_REPLAY_MAX": "10"}
    with ServerProcess(env=env) as server, client() as http:
        stalled_id = cut_off_a_slow_consumer(server, http)
        session = StreamableSession(http, server.url)
        assert session.call(call_tool("spawn_failing_greenlet", {}))["result"]["content"][0]["text"] == "spawned"
        server.stop()
        text = server.read_log()
    entries = [json.loads(line) for line in text.splitlines() if line.strip()]  # every line is JSON
    [failure] = [e for e in entries if e["logger"] == "mcp.greenlet"]
    assert failure["level"] == "error" and "failed with RuntimeError" in failure["message"]
    assert "a greenlet failed on purpose" in failure["exception"]
    assert any(f"session {stalled_id[:8]}" in e["message"] and "slow consumer" in e["message"] for e in entries)
    assert stalled_id not in text and session.session_id not in text
    assert not WHOLE_SESSION_ID.search(text)

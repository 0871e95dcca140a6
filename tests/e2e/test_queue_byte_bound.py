"""A stream whose client stops reading is cut off once MCP_QUEUE_MAX_BYTES of answers wait, on both stores.

The message-count bound is left far above what is sent, so only the byte bound can
end the stream; the worker stays healthy and the session's newest answers wait in
its replay log.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.raw_clients import call_tool, client, initialize
from tests.e2e.server_process import ServerProcess
from tests.e2e.test_redis_faults import stalled_stream
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

ANSWERS = 60
ANSWER_CHARS = 200_000  # 60 of them: ~12 MB, more than the socket buffers and the byte bound hold


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def store_env(request) -> dict[str, str]:
    """A 1 MiB queue bound with a count bound nothing here reaches, on either store."""
    env = {"MCP_QUEUE_MAX": "100000", "MCP_QUEUE_MAX_BYTES": str(1024 * 1024)}
    if request.param == "redis":
        redis = request.getfixturevalue("redis_server")
        redis.client().flushdb()
        env["MCP_REDIS_URL"] = redis.url
    return env


def test_a_stalled_stream_is_cut_off_at_the_byte_bound(store_env):
    with ServerProcess(env=store_env) as server, client() as http:
        sock, session_id = stalled_stream(server.port)
        try:
            endpoint = f"{server.base_url}/mcp?session_id={session_id}"
            assert http.post(endpoint, json=initialize("2024-11-05")).status_code == 202
            for _ in range(ANSWERS):
                assert http.post(endpoint, json=call_tool("echo", {"text": "x" * ANSWER_CHARS})).status_code == 202
            deadline = time.monotonic() + 20
            while "queue full (slow consumer)" not in server.read_log() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert f"closing stream of session {session_id[:8]}" in server.read_log()
        finally:
            sock.close()
        assert http.get(server.base_url + "/healthz").status_code == 200

"""Big answers for dropped legacy streams: each session's replay log stays within MCP_REPLAY_MAX_BYTES.

Three legacy sessions drop their streams and keep posting calls whose answers are
large; whatever the store (memory, or Redis), what it keeps per session stays under the
byte bound, the newest answers are the ones kept, and a resumed stream replays them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from flask_mcp_gevent.store.redis_keys import session_keys
from tests.e2e.raw_clients import LegacyStream, StreamableSession, call_tool, client, request
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

REPLAY_MAX_BYTES = 1024 * 1024
ANSWER_CHARS = 200_000
SESSIONS = 3
CALLS_PER_SESSION = 12


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def bounded_server(request) -> Iterator[tuple[ServerProcess, Any]]:
    """A server with a 1 MiB replay bound per session, on either store; the Redis one comes with a client."""
    env = {"MCP_PLUGINS": "tests.e2e.plugins.replay_tools", "MCP_REPLAY_MAX_BYTES": str(REPLAY_MAX_BYTES)}
    redis_client = None
    if request.param == "redis":
        redis = request.getfixturevalue("redis_server")
        redis.client().flushdb()
        env["MCP_REDIS_URL"] = redis.url
        redis_client = redis.client()
    with ServerProcess(env=env) as server:
        yield server, redis_client


def kept(observer: StreamableSession, session_id: str) -> dict[str, Any]:
    """What the server's replay log holds for session_id: answer ids and bytes."""
    return observer.call(call_tool("replay_kept", {"session": session_id}))["result"]["structuredContent"]


def post_and_wait_until_kept(observer: StreamableSession, http: httpx.Client, endpoint: str, session_id: str,
                             message: dict[str, Any], timeout: float = 15.0) -> None:
    """POST a call to a session without a stream, then wait until its answer reached the replay log."""
    assert http.post(endpoint, json=message).status_code == 202
    deadline = time.monotonic() + timeout
    while message["id"] not in kept(observer, session_id)["ids"]:
        assert time.monotonic() < deadline, f"answer {message['id']} never reached the replay log"
        time.sleep(0.05)


def test_replay_logs_of_dropped_streams_stay_under_the_byte_bound_and_keep_the_newest(bounded_server):
    server, redis_client = bounded_server
    with client() as http:
        observer = StreamableSession(http, server.url)
        sessions: list[tuple[str, str, str]] = []
        for _ in range(SESSIONS):
            stream = LegacyStream(http, server.base_url)
            stream.open()
            sessions.append((stream.session_id, stream.endpoint, stream.endpoint_data))
            stream.close()  # dropped: every answer from now on waits in the replay log
        posted: dict[str, list[Any]] = {}
        for session_id, endpoint, _ in sessions:
            posted[session_id] = []
            for n in range(CALLS_PER_SESSION):
                message = call_tool("echo", {"text": f"{n:04d}" + "x" * ANSWER_CHARS})
                post_and_wait_until_kept(observer, http, endpoint, session_id, message)
                posted[session_id].append(message["id"])

        for session_id, _, _ in sessions:
            held = kept(observer, session_id)
            answer_bytes = held["bytes"] / len(held["ids"])
            assert held["bytes"] <= REPLAY_MAX_BYTES
            # As many of the newest answers as fit, in order: the oldest went first.
            assert len(held["ids"]) == int(REPLAY_MAX_BYTES // answer_bytes) >= 2
            assert held["ids"] == posted[session_id][-len(held["ids"]):]
            if redis_client is not None:
                # What Redis really holds for the log, overhead included: nowhere near 12 answers.
                usage = redis_client.memory_usage(session_keys(session_id).replay, samples=0)
                assert usage < 2 * REPLAY_MAX_BYTES

        # A resumed stream replays the newest answers whole, then carries on.
        session_id, _, endpoint_data = sessions[0]
        resumed = LegacyStream(http, server.base_url, params={"session_id": session_id},
                               headers={"Last-Event-ID": "0"})
        with resumed:
            assert resumed.session_id == session_id
            marker = request("ping")
            assert resumed.post(marker).status_code == 202
            replayed = []
            for _ in range(CALLS_PER_SESSION + 2):
                message = resumed.next_event().json()
                if message.get("id") == marker["id"]:
                    break
                replayed.append(message)
        newest = posted[session_id][-len(replayed):]
        assert [message["id"] for message in replayed] == newest
        texts = [message["result"]["content"][0]["text"] for message in replayed]
        first = CALLS_PER_SESSION - len(replayed)
        assert texts == [f"{n:04d}" + "x" * ANSWER_CHARS for n in range(first, CALLS_PER_SESSION)]

"""Many sessions at once, slow calls and dropped streams: every answer reaches its own stream, and only it."""

from __future__ import annotations

import asyncio
import secrets
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.e2e.raw_clients import (
    BOTH,
    ENDPOINT_DATA,
    LegacyStream,
    StreamableSession,
    aiter_events,
    call_tool,
    client,
    initialize,
    notification,
    request,
)
from tests.e2e.sse_client import iter_events

pytestmark = pytest.mark.e2e

SESSIONS = 50
CALLS = 20
# Each session's calls are all POSTed at once, over this many connections besides its stream.
POSTS_IN_FLIGHT = 4
# Generous: the whole load, 50 streams and 1,000 calls, on a shared 2-core machine.
LOAD_DEADLINE_S = 120.0


@dataclass
class Outcome:
    """What one session sent and what its stream delivered."""

    index: int
    expected: dict[str, str] = field(default_factory=dict)  # request id -> the text echoed
    received: list[dict[str, Any]] = field(default_factory=list)


async def run_session(base_url: str, index: int, all_open: asyncio.Barrier) -> Outcome:
    """Open a legacy stream, initialize, make CALLS echo calls at once, and collect the stream's answers."""
    # A client per session: httpx's pool gets slow with hundreds of connections in one client.
    limits = httpx.Limits(max_connections=1 + POSTS_IN_FLIGHT)
    # Plain HTTP on loopback: skip building a TLS context per client, which costs more than the calls.
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=10.0), limits=limits, verify=False) as http:
        return await exchange(http, base_url, index, all_open)


async def exchange(http: httpx.AsyncClient, base_url: str, index: int, all_open: asyncio.Barrier) -> Outcome:
    """One session's traffic on its own client."""
    outcome = Outcome(index)
    token = secrets.token_hex(4)
    for n in range(CALLS):
        outcome.expected[f"s{index}-c{n}"] = f"session {index} call {n} {token}"
    async with http.stream("GET", base_url + "/mcp", headers={"Accept": "text/event-stream"}) as response:
        assert response.status_code == 200
        events = aiter_events(response)
        first = await anext(events)
        match = ENDPOINT_DATA.match(first.data)
        assert first.event == "endpoint" and match, first
        endpoint = base_url + first.data
        # Every stream is open before any session starts calling.
        await all_open.wait()

        init_id = f"s{index}-init"
        assert (await http.post(endpoint, json=initialize("2024-11-05", init_id))).status_code == 202
        async for event in events:
            if event.json().get("id") == init_id:
                break
        assert (await http.post(endpoint, json=notification("notifications/initialized"))).status_code == 202

        posts = [http.post(endpoint, json=call_tool("echo", {"text": text}, request_id))
                 for request_id, text in outcome.expected.items()]
        statuses = [answer.status_code for answer in await asyncio.gather(*posts)]
        assert statuses == [202] * CALLS
        async for event in events:
            outcome.received.append(event.json())
            if len(outcome.received) >= CALLS:
                break
    return outcome


async def run_load(base_url: str) -> list[Outcome]:
    """Run SESSIONS sessions concurrently."""
    all_open = asyncio.Barrier(SESSIONS)
    return await asyncio.gather(*(run_session(base_url, i, all_open) for i in range(SESSIONS)))


def test_fifty_sessions_of_twenty_calls_each_get_exactly_their_own_answers(server):
    outcomes = asyncio.run(asyncio.wait_for(run_load(server.base_url), LOAD_DEADLINE_S))
    misrouted = lost = duplicated = wrong = 0
    for outcome in outcomes:
        ids = [message.get("id") for message in outcome.received]
        misrouted += sum(1 for request_id in ids if request_id not in outcome.expected)
        duplicated += len(ids) - len(set(ids))
        lost += len(set(outcome.expected) - set(ids))
        for message in outcome.received:
            if message.get("id") in outcome.expected:
                content = message["result"]["content"]
                wrong += content != [{"type": "text", "text": outcome.expected[message["id"]]}]
    assert (misrouted, lost, duplicated, wrong) == (0, 0, 0, 0)
    assert sum(len(o.received) for o in outcomes) == SESSIONS * CALLS
    assert httpx.get(server.base_url + "/healthz").status_code == 200


# Slow calls (the tuned server has the sleep_ms plugin tool)
def test_slow_call_does_not_block_the_same_legacy_session(tuned_server):
    with client() as http, LegacyStream(http, tuned_server.base_url) as stream:
        stream.open()
        slow, fast = call_tool("sleep_ms", {"ms": 3000}), call_tool("echo", {"text": "fast"})
        assert stream.post(slow).status_code == 202
        assert stream.post(fast).status_code == 202
        assert stream.next_event().json()["id"] == fast["id"], "the echo waited for the slow call"
        answer = stream.wait_for(slow["id"])
        assert answer["result"]["content"] == [{"type": "text", "text": "slept 3000 ms"}]


def test_slow_call_does_not_block_the_same_streamable_session(tuned_server):
    with client() as http, ThreadPoolExecutor(1) as pool:
        session = StreamableSession(http, tuned_server.url)
        slow = pool.submit(session.call, call_tool("sleep_ms", {"ms": 3000}))
        fast = session.call(call_tool("echo", {"text": "fast"}))
        assert fast["result"]["content"] == [{"type": "text", "text": "fast"}]
        assert not slow.done(), "the echo waited for the slow call"
        assert slow.result(timeout=30)["result"]["content"][0]["text"] == "slept 3000 ms"
        session.delete()


def assert_server_healthy(server) -> None:
    """/healthz answers, a new session calls a tool, and the log shows no traceback."""
    assert httpx.get(server.base_url + "/healthz", timeout=10).status_code == 200
    with client() as http, LegacyStream(http, server.base_url) as stream:
        stream.open()
        assert stream.call(call_tool("echo", {"text": "alive"}))["result"]["content"][0]["text"] == "alive"
    with client() as http:
        session = StreamableSession(http, server.url)
        assert session.call(call_tool("add", {"a": 1, "b": 1}))["result"]["content"][0]["text"] == "2"
        session.delete()
    assert "Traceback" not in server.read_log()


def test_legacy_stream_closed_mid_call_leaves_server_healthy(tuned_server):
    with client() as http:
        stream = LegacyStream(http, tuned_server.base_url)
        stream.open()
        assert stream.call(request("ping"))["result"] == {}
        slow = call_tool("sleep_ms", {"ms": 1000})
        assert stream.post(slow).status_code == 202
        stream.close()
        assert_server_healthy(tuned_server)
        # The answer of the call whose stream went away is kept for the session: a resumed stream gets it.
        resumed = LegacyStream(http, tuned_server.base_url, params={"session_id": stream.session_id})
        with resumed:
            assert resumed.wait_for(slow["id"])["result"]["content"][0]["text"] == "slept 1000 ms"


def test_streamable_response_stream_closed_mid_call_leaves_server_healthy(tuned_server):
    with client() as http:
        session = StreamableSession(http, tuned_server.url)
        slow = call_tool("sleep_ms", {"ms": 1000, "announce": True})
        with http.stream("POST", session.url, json=slow, headers={"Accept": BOTH, **session.headers}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            first = next(iter_events(response))
            assert first.json()["method"] == "notifications/message"
        # The response stream is gone while the tool still sleeps.
        assert session.call(request("ping"))["result"] == {}
        assert_server_healthy(tuned_server)
        session.delete()

"""A bounded soak: 3 workers on Redis, 200 legacy sessions, 10,000 calls, at most 60 s; nothing lost or misrouted.

The GET streams are spread round-robin over the three workers (the others are
frozen while each one connects), and the POSTs go over a shared pool of
keep-alive connections wherever the kernel put them, so most answers cross
from one worker to another through Redis.
Every request id and echo text names its session: an answer that arrives on
another session's stream is misrouted, one that never arrives is lost.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import pytest

from flask_mcp_gevent.store.redis_keys import session_keys
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

WORKERS = 3
SESSIONS = 200
CALLS = 10_000
IN_FLIGHT_PER_SESSION = 2
LIMIT_S = 60.0
POST_CONNECTIONS = 48


@dataclass
class SoakSession:
    """One legacy session: its stream, what it asked and what came back."""

    index: int
    session_id: str = ""
    endpoint: str = ""
    stream: aiohttp.ClientResponse | None = None
    waiting: dict[str, asyncio.Future] = field(default_factory=dict)
    received: Counter = field(default_factory=Counter)
    misrouted: int = 0


@dataclass
class Tally:
    """What the soak counts."""

    lost: int = 0
    misrouted: int = 0
    duplicated: int = 0
    refused: int = 0
    answered: int = 0


async def read_stream(session: SoakSession, tally: Tally, attached: asyncio.Event) -> None:
    """Parse the session's SSE stream; hand each answer to the call waiting for it, or count it as misrouted."""
    event, data = "message", b""
    async for raw in session.stream.content:
        line = raw.rstrip(b"\r\n")
        if line.startswith(b"event:"):
            event = line[6:].strip().decode()
        elif line.startswith(b"data:"):
            data = line[5:].strip()
        elif not line and data:
            if event == "endpoint":
                session.endpoint = data.decode()
                session.session_id = session.endpoint.rsplit("=", 1)[1]
                attached.set()
            else:
                deliver(session, orjson.loads(data), tally)
            event, data = "message", b""


def deliver(session: SoakSession, message: Any, tally: Tally) -> None:
    """Check one answer belongs to this session, then wake its caller."""
    request_id = message.get("id") if isinstance(message, dict) else None
    if not isinstance(request_id, str):
        return  # notifications, if any, are not what this soak counts
    owner, _, _ = request_id.partition(":")
    text = ""
    if "result" in message and message["result"].get("content"):
        text = message["result"]["content"][0].get("text", "")
    if request_id != "init" and (owner != str(session.index) or not text.startswith(session.session_id)):
        session.misrouted += 1
        tally.misrouted += 1
        return
    session.received[request_id] += 1
    if session.received[request_id] > 1:
        tally.duplicated += 1
        return
    waiter = session.waiting.pop(request_id, None)
    if waiter is not None and not waiter.done():
        waiter.set_result(message)


async def call(http: aiohttp.ClientSession, base_url: str, session: SoakSession, message: dict, tally: Tally,
               timeout: float) -> dict | None:
    """POST a request and wait for its answer on the session's stream; None when it never came."""
    waiter = asyncio.get_running_loop().create_future()
    session.waiting[message["id"]] = waiter
    async with http.post(base_url + session.endpoint, data=orjson.dumps(message),
                         headers={"Content-Type": "application/json"}) as posted:
        await posted.read()
        if posted.status != 202:
            tally.refused += 1
            session.waiting.pop(message["id"], None)
            return None
    try:
        return await asyncio.wait_for(waiter, timeout)
    except TimeoutError:
        session.waiting.pop(message["id"], None)
        return None


async def soak(server: ServerProcess, on_open: Callable[[list[SoakSession]], None]) -> tuple[Tally, float]:
    """Open the sessions round-robin over the workers, run the calls, and count what went wrong."""
    base_url = server.base_url
    worker_pids = server.worker_pids()
    tally = Tally()
    streams = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                    timeout=aiohttp.ClientTimeout(total=None, sock_read=90))
    posts = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=POST_CONNECTIONS),
                                  timeout=aiohttp.ClientTimeout(total=30))
    sessions = [SoakSession(index) for index in range(SESSIONS)]
    readers = []
    try:
        for session in sessions:
            with server.accepting_only(worker_pids[session.index % len(worker_pids)]):
                session.stream = await streams.get(base_url + "/mcp", headers={"Accept": "text/event-stream"})
                assert session.stream.status == 200
                attached = asyncio.Event()
                readers.append(asyncio.create_task(read_stream(session, tally, attached)))
                await asyncio.wait_for(attached.wait(), 10)
        hello = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
                 "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                            "clientInfo": {"name": "soak", "version": "0"}}}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        opened = await asyncio.gather(*(call(posts, base_url, s, dict(hello), tally, 20) for s in sessions))
        assert all(opened), "a session did not initialize"
        for session in sessions:
            async with posts.post(base_url + session.endpoint, data=orjson.dumps(initialized),
                                  headers={"Content-Type": "application/json"}) as done:
                assert done.status == 202
        on_open(sessions)

        per_session = CALLS // SESSIONS
        started = time.monotonic()
        deadline = started + LIMIT_S

        async def run_session(session: SoakSession) -> None:
            gate = asyncio.Semaphore(IN_FLIGHT_PER_SESSION)

            async def one(n: int) -> None:
                async with gate:
                    text = f"{session.session_id}:{n}"
                    message = {"jsonrpc": "2.0", "id": f"{session.index}:{n}", "method": "tools/call",
                               "params": {"name": "echo", "arguments": {"text": text}}}
                    answer = await call(posts, base_url, session, message, tally,
                                        max(1.0, deadline - time.monotonic()))
                    if answer is None:
                        tally.lost += 1
                    elif answer["result"]["content"][0]["text"] != text:
                        tally.misrouted += 1
                    else:
                        tally.answered += 1

            await asyncio.gather(*(one(n) for n in range(per_session)))

        await asyncio.gather(*(run_session(s) for s in sessions))
        elapsed = time.monotonic() - started
    finally:
        for reader in readers:
            reader.cancel()
        await asyncio.gather(*readers, return_exceptions=True)
        for session in sessions:
            if session.stream is not None:
                session.stream.close()
        await streams.close()
        await posts.close()
    return tally, elapsed


@pytest.mark.timeout(240)
def test_soak_three_workers_200_sessions_10000_calls_nothing_lost_or_misrouted(redis_server):  # noqa: F811
    redis_server.client().flushdb()
    # WARNING keeps the per-request lines out; gunicorn still logs a worker that dies or is killed.
    env = {"MCP_REDIS_URL": redis_server.url, "MCP_LOG_LEVEL": "WARNING"}
    owners: set[bytes] = set()

    def note_stream_owners(sessions: list[SoakSession]) -> None:
        client = redis_server.client()
        owners.update(client.get(session_keys(s.session_id).claim) or b"" for s in sessions)

    with ServerProcess(env=env, workers=WORKERS) as server:
        tally, elapsed = asyncio.run(soak(server, note_stream_owners))
        log = server.read_log()
    print(f"soak: {tally} in {elapsed:.1f} s ({CALLS / elapsed:.0f} calls/s)")
    assert (tally.lost, tally.misrouted, tally.duplicated, tally.refused) == (0, 0, 0, 0), tally
    assert tally.answered == CALLS
    assert elapsed <= LIMIT_S, f"{CALLS} calls took {elapsed:.1f} s"
    # The streams sat on every worker, so answers really crossed between them.
    assert len({owner.split(b"-", 1)[0] for owner in owners if owner}) == WORKERS
    assert "Traceback" not in log

"""Without authentication, one client cannot fill the server: a session quota per address, a short first TTL.

Clients without a principal are counted by address (MCP_MAX_SESSIONS_PER_ADDRESS; across the fleet with
Redis), and a session that never came back after initialize lives only MCP_PENDING_SESSION_TTL_S. Linux
routes all of 127.0.0.0/8 to lo, so a client bound to 127.0.0.2 is another address to the server.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from flask_mcp_gevent.errors import SERVER_UNAVAILABLE
from tests.e2e.raw_clients import BOTH, StreamableSession, initialize, notification, request
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

VERSION = "2025-06-18"
PER_ADDRESS = 3
PENDING_TTL_S = 1.0
LIMITS = {
    "MCP_MAX_SESSIONS_PER_ADDRESS": str(PER_ADDRESS),
    "MCP_PENDING_SESSION_TTL_S": str(PENDING_TTL_S),
    "MCP_SESSION_TTL_S": "120",
}


@pytest.fixture(scope="module", params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def server(request) -> Iterator[ServerProcess]:
    """One worker on the in-memory store, or three workers on Redis, with a small per-address quota."""
    if request.param == "memory":
        with ServerProcess(env=LIMITS) as process:
            yield process
        return
    redis = request.getfixturevalue("redis_server")
    redis.client().flushall()
    with ServerProcess(env={**LIMITS, "MCP_REDIS_URL": redis.url}, workers=3) as process:
        yield process


def client_from(address: str | None = None) -> httpx.Client:
    """A client whose connections come from address (the default one when None), a new connection per request."""
    # A client given a transport ignores its own limits: the transport must refuse keep-alive itself, or a request
    # would reuse a connection to a worker that accepting_only has stopped.
    no_keepalive = httpx.Limits(max_keepalive_connections=0)
    transport = httpx.HTTPTransport(local_address=address, limits=no_keepalive) if address else None
    return httpx.Client(transport=transport, timeout=httpx.Timeout(15.0, connect=5.0), limits=no_keepalive)


def initialize_from(http: httpx.Client, server: ServerProcess) -> httpx.Response:
    """POST initialize without a session: opens one, or is refused."""
    return http.post(server.url, json=initialize(VERSION), headers={"Accept": BOTH})


def spread(server: ServerProcess, attempts: int) -> Iterator[int]:
    """Yield attempts times, with new connections landing on each worker in turn (an equal share each)."""
    pids = server.worker_pids()
    for pid in pids:
        with server.accepting_only(pid):
            for _ in range(attempts // len(pids)):
                yield pid


def test_one_address_is_refused_past_its_quota_while_another_gets_in(server):
    statuses = []
    opened = []
    with client_from() as http:  # from 127.0.0.1
        for _ in spread(server, 6):
            answer = initialize_from(http, server)
            statuses.append(answer.status_code)
            if answer.status_code == 200:
                opened.append(answer.headers["Mcp-Session-Id"])
            else:
                error = answer.json()["error"]
                assert error["code"] == SERVER_UNAVAILABLE
                assert "MCP_MAX_SESSIONS_PER_ADDRESS" in error["message"]
                assert "Retry-After" in answer.headers
        assert len(statuses) == 6
        assert statuses.count(200) == PER_ADDRESS, statuses
        assert statuses.count(503) == len(statuses) - PER_ADDRESS, statuses
        with client_from("127.0.0.2") as other:
            assert initialize_from(other, server).status_code == 200
        # Ending a session frees its place.
        ended = http.delete(server.url, headers={"Mcp-Session-Id": opened[0], "MCP-Protocol-Version": VERSION})
        assert ended.status_code == 204
        assert initialize_from(http, server).status_code == 200


def test_a_session_that_never_came_back_expires_after_the_short_ttl_while_a_used_one_lives(server):
    with client_from("127.0.0.3") as http:
        abandoned = initialize_from(http, server)
        assert abandoned.status_code == 200
        abandoned_id = abandoned.headers["Mcp-Session-Id"]
        used = StreamableSession(http, server.url, VERSION)  # sends notifications/initialized
        # No request may touch the abandoned session before the check: a request is what promotes it.
        time.sleep(PENDING_TTL_S * 3)
        assert used.call(request("ping"))["result"] == {}
        headers = {"Mcp-Session-Id": abandoned_id, "MCP-Protocol-Version": VERSION, "Accept": BOTH}
        gone = http.post(server.url, json=notification("notifications/initialized"), headers=headers)
        assert gone.status_code == 404, gone.text
        # Its place is free again for the address.
        assert used.delete().status_code == 204

"""limits: concurrent tool calls per session, sessions per principal."""

from __future__ import annotations

import gevent
import pytest
from gevent.event import Event

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.errors import SERVER_UNAVAILABLE
from flask_mcp_gevent.limits import CallSlots, SessionQuota, SessionQuotaExceeded
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.session import STREAMABLE, Session
from flask_mcp_gevent.store.memory import MemoryStore
from mcp_tools import Registry, tool
from tests.redis_server import redis_server  # noqa: F401  (fixture)


def test_call_slots_are_counted_per_session_and_given_back():
    store = MemoryStore(Settings.from_environ({}))
    slots = CallSlots(store.sessions, 2)
    first, second = slots.acquire("a"), slots.acquire("a")
    assert first and second
    assert slots.acquire("a") is None
    assert slots.acquire("b")
    slots.release("a", first)
    third = slots.acquire("a")
    assert third
    for token in (second, third):
        slots.release("a", token)
    assert "a" not in store.sessions.calls_running  # released sessions leave nothing behind


GATE = Event()


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def wait_for_gate() -> str:
    """Block until the test opens the gate."""
    GATE.wait(10)
    return "done"


def test_the_server_refuses_tool_calls_beyond_the_session_s_concurrency_limit():
    registry = Registry.discover()
    registry.add_function(wait_for_gate)
    server = Server(Settings.from_environ({"MCP_MAX_CONCURRENT_CALLS": "2"}), registry=registry)
    GATE.clear()
    try:
        session = server.open_session(STREAMABLE)
        session.protocol_version = "2025-06-18"

        def call(request_id):
            body = parse_body(dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                                     "params": {"name": "wait_for_gate", "arguments": {}}}))
            return server.accept(session, body, lambda m: None)[0][0]

        running = [call(1), call(2)]
        gevent.sleep(0)  # let both start and take their slots
        refused = call(3)
        refused.join(5)
        assert refused.value["error"]["code"] == SERVER_UNAVAILABLE
        assert "MCP_MAX_CONCURRENT_CALLS" in refused.value["error"]["message"]
        GATE.set()
        gevent.joinall(running, timeout=5)
        assert all(g.value["result"]["isError"] is False for g in running)
        again = call(4)
        again.join(5)
        assert "result" in again.value  # the slots came back
    finally:
        GATE.set()
        server.shutdown()


def test_sessions_per_principal_are_capped_and_freed_by_closing():
    store = MemoryStore(Settings.from_environ({}))
    quota = SessionQuota(store.sessions, Settings.from_environ({"MCP_MAX_SESSIONS_PER_PRINCIPAL": "2"}))
    opened = []
    for _ in range(2):
        session = Session(principal="alice")
        quota.create(session)
        opened.append(session.id)
    with pytest.raises(SessionQuotaExceeded, match="MCP_MAX_SESSIONS_PER_PRINCIPAL"):
        quota.create(Session(principal="alice"))
    quota.create(Session(principal="bob"))  # another principal has its own count
    quota.create(Session())  # without a principal or an address, only the store's total applies
    store.sessions.close_session(opened[0])
    quota.create(Session(principal="alice"))
    store.events.shutdown()


def test_sessions_per_address_are_capped_for_clients_without_a_principal():
    store = MemoryStore(Settings.from_environ({}))
    quota = SessionQuota(store.sessions, Settings.from_environ({"MCP_MAX_SESSIONS_PER_ADDRESS": "2"}))
    for _ in range(2):
        quota.create(Session(), "192.0.2.1")
    with pytest.raises(SessionQuotaExceeded, match="MCP_MAX_SESSIONS_PER_ADDRESS"):
        quota.create(Session(), "192.0.2.1")
    quota.create(Session(), "192.0.2.2")  # another address has its own count
    quota.create(Session(principal="alice"), "192.0.2.1")  # a principal is counted as itself, not its address
    # IPv6 addresses count per /64: a host with a prefix cannot open 2**64 quotas.
    quota.create(Session(), "2001:db8::1")
    quota.create(Session(), "2001:db8::2")
    with pytest.raises(SessionQuotaExceeded):
        quota.create(Session(), "2001:db8::3")
    quota.create(Session(), "2001:db8:0:1::1")
    store.events.shutdown()


def test_the_server_applies_the_session_quota():
    server = Server(Settings.from_environ({"MCP_MAX_SESSIONS_PER_PRINCIPAL": "1"}))
    try:
        first = server.open_session(STREAMABLE, "alice")
        with pytest.raises(SessionQuotaExceeded):
            server.open_session(STREAMABLE, "alice")
        server.store.sessions.close_session(first.id)
        server.open_session(STREAMABLE, "alice")
    finally:
        server.shutdown()


def test_the_rate_limit_counts_mcp_requests_per_client_and_answers_429_with_retry_after():
    from app import create_app

    client = create_app({"MCP_RATE_LIMIT": "3/minute"}).test_client()
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    statuses = [client.post("/mcp", json=ping).status_code for _ in range(3)]
    assert 429 not in statuses
    refused = client.post("/mcp", json=ping)
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert refused.get_json()["error"]["data"]["retryAfter"] == int(refused.headers["Retry-After"])
    assert client.get("/healthz").status_code == 200  # operations endpoints are never limited
    # Without authentication the key is the client address: another address has its own count.
    assert client.post("/mcp", json=ping, environ_base={"REMOTE_ADDR": "127.0.0.9"}).status_code != 429


def test_no_rate_limit_by_default():
    from app import create_app

    client = create_app({}).test_client()
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert all(client.post("/mcp", json=ping).status_code != 429 for _ in range(50))


@pytest.mark.redis
def test_with_redis_the_rate_is_shared_by_every_worker(redis_server):  # noqa: F811
    from app import create_app

    config = {"MCP_RATE_LIMIT": "4/minute", "MCP_REDIS_URL": redis_server.url}
    workers = [create_app(config).test_client(), create_app(config).test_client()]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    try:
        statuses = [workers[n % 2].post("/mcp", json=ping).status_code for n in range(5)]
        # Two "workers" with their own memory, one count: the fifth request overall is refused.
        assert 429 not in statuses[:4]
        assert statuses[4] == 429
        assert any(key.startswith(b"LIMITS:") or b"mcp-rate" in key for key in redis_server.client().keys("*"))
    finally:
        for worker in workers:
            worker.application.extensions["mcp"].shutdown()

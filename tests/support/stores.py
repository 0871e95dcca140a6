"""Store test helpers: stores of either backend built from settings overrides, a clock tests step, event readers."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gevent
import pytest

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.protocol.request_context import RequestContext
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.session import Session
from flask_mcp_gevent.store import Store
from flask_mcp_gevent.store.memory import MemoryStore
from flask_mcp_gevent.store.redis import RedisStore
from flask_mcp_gevent.tasks.backend import task_store_for
from flask_mcp_gevent.tasks.store import TaskStore
from mcp_tools import Registry
from tests.redis_cluster import RedisClusterSet, redis_cluster  # noqa: F401  (fixture)
from tests.redis_sentinel import MASTER_NAME, RedisSentinelSet
from tests.redis_server import RedisServer, redis_server  # noqa: F401  (fixture)

# The backends whose store is a RedisStore: one redis-server, a three-master Redis Cluster, a master behind Sentinels.
REDIS_BACKENDS = ("redis", "cluster", "sentinel")


class SteppedClock:
    """A monotonic clock that moves only when the test steps it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        """The current time, in seconds."""
        return self.now

    def step(self, seconds: float) -> None:
        """Move time forward."""
        self.now += seconds


class Stores:
    """Builds stores of one backend with settings overrides, and stops them after the test."""

    def __init__(self, backend: str, server: RedisServer | RedisClusterSet | RedisSentinelSet | None) -> None:
        self.backend = backend
        self.server = server
        self.clock = SteppedClock()
        self.made: list[Store] = []

    def __call__(self, **overrides: Any) -> Store:
        """A fresh store (for redis: a fresh worker on the shared server); in-memory stores read self.clock."""
        config: dict[str, Any] = {"MCP_RESUME_WINDOW_S": "60", **{k: str(v) for k, v in overrides.items()}}
        if self.backend == "sentinel":
            config.update(MCP_REDIS_SENTINELS=self.server.addresses, MCP_REDIS_SENTINEL_MASTER=MASTER_NAME)
        elif self.backend in REDIS_BACKENDS:
            config["MCP_REDIS_URL"] = self.server.url
        if self.backend == "cluster":
            config["MCP_REDIS_CLUSTER"] = "1"
        settings = Settings.from_mapping(config)
        if self.backend in REDIS_BACKENDS:
            store: Store = RedisStore(settings)
        else:
            store = MemoryStore(settings, clock=self.clock)
        self.made.append(store)
        return store

    def elapse(self, seconds: float) -> None:
        """Let seconds pass for the stores: step the in-memory stores' clock; Redis keeps its own time, so wait."""
        if self.backend in REDIS_BACKENDS:
            gevent.sleep(seconds)
        else:
            self.clock.step(seconds)

    def close(self) -> None:
        """Stop every store's greenlets and connections."""
        for store in self.made:
            store.events.shutdown()
            if isinstance(store, RedisStore):
                store.stop()


def take(subscription, count: int, timeout: float = 5.0) -> list[tuple[str, bytes]]:
    """Read exactly count events, or fewer if the deadline passes first."""
    events: list[tuple[str, bytes]] = []
    deadline = time.monotonic() + timeout
    while len(events) < count and time.monotonic() < deadline:
        item = subscription.get(max(0.01, deadline - time.monotonic()))
        if item is not None:
            events.append(item)
    return events


# How long the first event may take: on a cluster, pub/sub crosses nodes, and a loaded CI machine is slow.
FIRST_EVENT_S = 3.0


def drain(subscription, limit: int = 50, timeout: float = 0.2,
          first_timeout: float = FIRST_EVENT_S) -> list[tuple[str, bytes]]:
    """Read events until none arrives within timeout (the first one gets first_timeout)."""
    events = []
    for _ in range(limit):
        item = subscription.get(timeout if events else first_timeout)
        if item is None:
            break
        events.append(item)
    return events


def payloads(events: list[tuple[str, bytes]]) -> list[bytes]:
    """The JSON bytes of each event."""
    return [data for _, data in events]


def new_session(store: Store, **fields: Any) -> Session:
    """Create and store a session."""
    session = Session(**fields)
    store.sessions.create_session(session)
    return session


@contextmanager
def queued_commands(store: RedisStore) -> Iterator[list[tuple[bytes, int]]]:
    """What the store's multiplexed connection is given to write meanwhile: each queued RESP, its replies expected."""
    queued: list[tuple[bytes, int]] = []
    enqueue = store.link.multiplexer._enqueue

    def recorded(data: bytes, *args: Any, **kwargs: Any) -> Any:
        queued.append((data, kwargs.get("expected", 1)))
        return enqueue(data, *args, **kwargs)

    store.link.multiplexer._enqueue = recorded
    try:
        yield queued
    finally:
        del store.link.multiplexer._enqueue


def message(n: int) -> dict[str, Any]:
    """A small JSON-RPC notification numbered n."""
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}


def numbers(events: list[tuple[str, bytes]]) -> list[int]:
    """The n of each message event."""
    return [json.loads(data)["params"]["n"] for _, data in events]


BACKENDS = ["memory", pytest.param("redis", marks=pytest.mark.redis),
            pytest.param("cluster", marks=pytest.mark.redis)]


@pytest.fixture(params=BACKENDS)
def make_store(request) -> Iterator[Stores]:
    """A store factory for each backend; the Redis one starts on an empty database."""
    server = None
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
        server.client().flushdb()
    elif request.param == "cluster":
        server = request.getfixturevalue("redis_cluster")
        server.flush()
    stores = Stores(request.param, server)
    yield stores
    stores.close()


@pytest.fixture
def store(make_store) -> Store:
    """A store with default settings."""
    return make_store()


@pytest.fixture
def task_store(store) -> TaskStore:
    """The task store a server over store makes beside it: in Redis beside a RedisStore, else in memory."""
    return task_store_for(store, store.settings)


@pytest.fixture
def store_log() -> Iterator[list[logging.LogRecord]]:
    """Records written to the mcp.store logger during the test."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("mcp.store")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


@pytest.fixture
def redis_stores(redis_server) -> Iterator[Stores]:  # noqa: F811
    """A factory of RedisStore 'workers' sharing the module's redis-server."""
    redis_server.client().flushdb()
    stores = Stores("redis", redis_server)
    yield stores
    stores.close()


def ask(server: Server, session: Session, method: str, params: dict[str, Any], timeout: float,
        send: Any = None) -> dict[str, Any]:
    """Ask the session's client a question as a tool's context does, from server; return the client's answer."""
    return RequestContext(server.services, session, send).ask(method, params, timeout)


def serve(store: Store, registry: Registry | None = None) -> Server:
    """A server over the store (a worker's, for the fleet tests), with an empty registry unless one is given."""
    return Server(store.settings, registry=registry if registry is not None else Registry(), store=store)  # type: ignore[attr-defined]

"""A Redis at its maxmemory with no eviction refuses writes (-OOM): on the store's command path that is an outage.

Clients get 503 -32004 and retry, as for any Redis that cannot serve now, never a 500.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis.exceptions import OutOfMemoryError, ResponseError

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.store.redis_connection import unavailable
from tests.redis_server import RedisServer
from tests.support.stores import Stores, new_session

pytestmark = pytest.mark.redis


@pytest.fixture(scope="module")
def small_redis() -> Iterator[RedisServer]:
    """A redis-server of its own, whose maxmemory the tests lower."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.cleanup()


def test_an_out_of_memory_refusal_counts_as_the_store_unavailable():
    assert unavailable(OutOfMemoryError("command not allowed when used memory > 'maxmemory'."))
    assert not unavailable(ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value"))


def test_through_the_store_a_full_redis_is_unavailable_and_serves_again_when_it_has_room(small_redis):
    stores = Stores("redis", small_redis)
    admin = small_redis.client()
    try:
        admin.flushdb()
        store = stores(MCP_REDIS_TIMEOUT_S=5)
        session = new_session(store)
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", 1)
        try:
            with pytest.raises(StoreUnavailable):
                new_session(store)
        finally:
            admin.config_set("maxmemory", 0)
        assert store.sessions.peek_session(session.id).id == session.id
        assert new_session(store).id != session.id
    finally:
        stores.close()

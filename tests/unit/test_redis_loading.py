"""A Redis loading its dataset (after a restart) answers -LOADING: on the store's command path that is an outage.

redis-py raises a LOADING reply itself (a BusyLoadingError, which is a ConnectionError, not a ResponseError); the
multiplexer parses it into the same exception and must raise it too, so the outage guard answers 503, rather than
hand it back as a reply (a 500 where the reply is read, or a write that never happened taken for done).
"""

from __future__ import annotations

from collections.abc import Iterator

import gevent
import pytest
import redis
from redis.exceptions import BusyLoadingError

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.store.redis_connection import CooperativeConnection
from flask_mcp_gevent.store.redis_link import multiplexer_for
from flask_mcp_gevent.store.redis_multiplex import Multiplexer
from tests.redis_server import RedisServer
from tests.support.stores import Stores, new_session
from tests.support.waiting import wait_until

pytestmark = pytest.mark.redis

# Keys in the dataset, and how long Redis takes over each when it loads them back: about a second of LOADING.
KEYS = 1000
KEY_LOAD_DELAY_US = 1000


@pytest.fixture(scope="module")
def debug_redis() -> Iterator[RedisServer]:
    """A redis-server that takes DEBUG RELOAD from loopback (to load its dataset while clients are connected)."""
    server = RedisServer(extra_args=("--enable-debug-command", "local")).start()
    try:
        yield server
    finally:
        server.cleanup()


def cooperative_client(server: RedisServer) -> redis.Redis:
    """A client on gevent sockets: while it waits for Redis, other greenlets run."""
    return redis.Redis(connection_pool=redis.ConnectionPool.from_url(
        server.url, connection_class=CooperativeConnection, socket_timeout=30, protocol=2))


def loading(client: redis.Redis) -> bool:
    """Whether Redis answers LOADING."""
    try:
        client.ping()
    except BusyLoadingError:
        return True
    return False


def start_loading(server: RedisServer) -> gevent.Greenlet:
    """Have Redis save and load its dataset back, slowly; return once it answers LOADING (join the greenlet)."""
    admin = server.client()
    admin.execute_command("DEBUG", "POPULATE", KEYS, "filler", 100)
    admin.config_set("key-load-delay", KEY_LOAD_DELAY_US)
    # Redis answers other clients while loading only between chunks of this many bytes: many chunks.
    admin.config_set("loading-process-events-interval-bytes", 1024)
    reloading = gevent.spawn(cooperative_client(server).execute_command, "DEBUG", "RELOAD")
    probe = cooperative_client(server)
    wait_until(lambda: loading(probe), timeout=5, what="Redis loading its dataset")
    return reloading


def finish_loading(server: RedisServer, reloading: gevent.Greenlet) -> None:
    """Wait for the reload to end, and take the slow loading back."""
    reloading.join(10)
    assert reloading.successful(), reloading.exception
    server.client().config_set("key-load-delay", 0)


@pytest.fixture
def mux(debug_redis) -> Iterator[Multiplexer]:
    """A multiplexer made as the store makes its own, connected before Redis starts loading."""
    pool = redis.BlockingConnectionPool.from_url(
        debug_redis.url, connection_class=CooperativeConnection, protocol=2, socket_timeout=5, timeout=5)
    commands = multiplexer_for(redis.Redis(connection_pool=pool))
    assert isinstance(commands, Multiplexer)
    assert commands.execute("PING") == b"PONG"
    yield commands
    commands.close()
    pool.disconnect()


def test_a_loading_reply_is_raised_to_its_command_not_returned_as_its_reply(mux, debug_redis):
    reloading = start_loading(debug_redis)
    try:
        with pytest.raises(BusyLoadingError):
            mux.execute("GET", "filler:1")
    finally:
        finish_loading(debug_redis, reloading)
    assert mux.execute("GET", "absent") is None  # the same connection serves again once loaded


def test_a_script_redis_refused_while_loading_raises_the_refusal(mux, debug_redis):
    script = debug_redis.client().register_script("return redis.call('SET', KEYS[1], ARGV[1])")
    reloading = start_loading(debug_redis)
    try:
        with pytest.raises(BusyLoadingError):
            mux.run(script, ["stored"], ["during loading"])
    finally:
        finish_loading(debug_redis, reloading)
    assert debug_redis.client().get("stored") is None  # refused, not run


def test_through_the_store_redis_loading_is_unavailable_for_reads_and_writes(debug_redis):
    stores = Stores("redis", debug_redis)
    try:
        debug_redis.client().flushdb()
        store = stores(MCP_REDIS_TIMEOUT_S=5)
        session = new_session(store)
        reloading = start_loading(debug_redis)
        try:
            with pytest.raises(StoreUnavailable):
                store.sessions.peek_session(session.id)
            with pytest.raises(StoreUnavailable):  # not a session Redis never stored
                new_session(store)
        finally:
            finish_loading(debug_redis, reloading)
        assert store.sessions.peek_session(session.id).id == session.id
    finally:
        stores.close()

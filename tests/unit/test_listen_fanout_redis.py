"""A change made on one Redis worker reaches every worker's listen streams exactly once, each tagged."""

from __future__ import annotations

import gevent

from flask_mcp_gevent.stateless.listen import listen_messages
from tests.support.stores import serve
from tests.support.waiting import wait_until

TAG = "io.modelcontextprotocol/subscriptionId"


def everyone(uri: str) -> bool:
    """A principal that may read every resource."""
    return True


def received(stream, quiet_s: float = 0.5) -> list[dict]:
    """Every message a stream got after its acknowledgment, until it stays quiet for quiet_s."""
    messages = listen_messages(stream, quiet_s)
    next(messages)
    found = []
    for message in messages:
        if message is None:
            return found
        found.append(message)
    return found


def test_one_change_reaches_each_listen_stream_on_three_workers_once(redis_stores):
    workers = [serve(redis_stores()) for _ in range(3)]
    registries = [server.listeners for server in workers]
    for server in workers:
        assert wait_until(server.ready, timeout=10)
    streams = [registries[n % 3].open(n, None, {"toolsListChanged": True, "resourceSubscriptions": ["file:///x"]},
                                      everyone) for n in range(7)]
    workers[1].announce_list_changed("tool")
    workers[2].resource_updated("file:///x")
    readers = [gevent.spawn(received, stream) for stream in streams]
    gevent.joinall(readers, timeout=10)
    for n, reader in enumerate(readers):
        # Two changes from two workers: each arrives once; their order across workers is not promised.
        assert sorted((m["method"], m["params"]["_meta"][TAG]) for m in reader.value) == [
            ("notifications/resources/updated", n), ("notifications/tools/list_changed", n)]

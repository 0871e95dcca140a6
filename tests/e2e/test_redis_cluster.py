"""The Redis store on a Redis Cluster, against real processes: three cluster masters and gunicorn with two workers.

Every wire works; legacy sessions whose keys live on every master, with streams on
every worker, get each answer exactly once whichever worker runs the call; and a
change on one worker reaches streams on every worker through cluster-wide pub/sub.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from flask_mcp_gevent.store.redis_keys import session_keys
from tests.e2e.ha_clients import LegacyAnswers, every_wire_adds, tool_text
from tests.e2e.raw_clients import LegacyStream, call_tool, client
from tests.e2e.server_process import ServerProcess
from tests.redis_cluster import RedisClusterSet, redis_cluster  # noqa: F401  (fixture)
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

PLUGINS = "tests.e2e.plugins.scale_tools,tests.e2e.plugins.feature_tools"
STREAMS_PER_WORKER = 6
MASTERS = 3
# Rounds of one new stream per worker at most: 40 sessions all missing one master of three is a 1-in-10^6 draw.
MAX_STREAM_ROUNDS = 20
CALLS_PER_SESSION = 20


@pytest.fixture(scope="module")
def server(redis_cluster) -> Iterator[ServerProcess]:  # noqa: F811
    """gunicorn with two workers on the cluster, given one node's address."""
    redis_cluster.flush()
    env = {"MCP_REDIS_URL": redis_cluster.url, "MCP_REDIS_CLUSTER": "1", "MCP_PLUGINS": PLUGINS}
    with ServerProcess(env=env, workers=2) as process:
        yield process


@pytest.fixture
def streams_on_every_worker(server, redis_cluster) -> Iterator[list[LegacyStream]]:  # noqa: F811
    """At least STREAMS_PER_WORKER legacy sessions whose GET stream each worker holds, opened and initialized,
    with keys on every master: session ids are random, so more are opened (a bounded number) until each has one."""
    clients: list[httpx.Client] = []
    streams: list[LegacyStream] = []
    masters: set[int] = set()
    try:
        for round_number in range(MAX_STREAM_ROUNDS):
            if round_number >= STREAMS_PER_WORKER and len(masters) == MASTERS:
                break
            for pid in server.worker_pids():
                clients.append(client())
                with server.accepting_only(pid):
                    streams.append(LegacyStream(clients[-1], server.base_url))
                masters.add(redis_cluster.master_port_of(session_keys(streams[-1].session_id).session))
        for stream in streams:
            stream.open()
        yield streams
    finally:
        for stream in streams:
            stream.close()
        for http in clients:
            http.close()


def test_every_wire_works_on_a_redis_cluster(server):
    assert every_wire_adds(server.base_url, 20, 22) == ["42", "42", "42"]
    assert httpx.get(server.base_url + "/readyz").status_code == 200


def test_legacy_answers_reach_streams_on_every_worker_once_from_every_master(server, redis_cluster,  # noqa: F811
                                                                            streams_on_every_worker):
    cluster = redis_cluster.client()
    # Which master holds a session as the masters say, not a client's slot cache (through one, a CI run saw
    # every session on two masters of three).
    masters = {redis_cluster.master_port_of(session_keys(stream.session_id).session)
               for stream in streams_on_every_worker}
    holders = {int(cluster.get(session_keys(stream.session_id).claim).split(b"-")[0])
               for stream in streams_on_every_worker}
    assert masters == {node.port for node in redis_cluster.nodes}, (masters, len(streams_on_every_worker))
    assert holders == set(server.worker_pids())
    readers = [LegacyAnswers(stream) for stream in streams_on_every_worker]
    sent: list[set[int]] = [set() for _ in streams_on_every_worker]
    with httpx.Client(timeout=15, limits=httpx.Limits(max_keepalive_connections=0)) as posts:  # any worker
        for _ in range(CALLS_PER_SESSION):
            for stream, ids in zip(streams_on_every_worker, sent, strict=True):
                message = call_tool("worker_pid", {})
                assert posts.post(stream.endpoint, json=message).status_code == 202
                ids.add(message["id"])
        # One last call per session: a stream delivers in order, so a repeat of an earlier answer comes before it.
        last = [call_tool("worker_pid", {}) for _ in streams_on_every_worker]
        for stream, message in zip(streams_on_every_worker, last, strict=True):
            assert posts.post(stream.endpoint, json=message).status_code == 202
    assert wait_until(lambda: all(message["id"] in reader.answers for reader, message in zip(readers, last,
                                                                                            strict=True)), timeout=20)
    for reader, ids, message in zip(readers, sent, last, strict=True):
        assert reader.answers == {request_id: 1 for request_id in ids | {message["id"]}}
    total = sum(len(ids) for ids in sent)
    assert total == len(streams_on_every_worker) * CALLS_PER_SESSION


def test_a_change_on_one_worker_reaches_streams_on_every_worker(server, streams_on_every_worker):
    trigger, *others = streams_on_every_worker
    answer = trigger.call(call_tool("change_registry", {"kind": "tool", "action": "add", "name": "rt-cluster"}))
    assert "added" in tool_text(answer)
    for stream in others:
        assert stream.next_event().json()["method"] == "notifications/tools/list_changed"

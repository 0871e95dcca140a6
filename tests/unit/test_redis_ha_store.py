"""What Redis high availability asks of the store: on a cluster, each script's keys in one slot and pub/sub across
masters; a master refusing writes (min-replicas-to-write) is an outage like any other; with Sentinel, a planned
failover moves every worker to the new master by itself.

The store contract runs on a three-master cluster too (the "cluster" backend of tests/support/stores.py); these are
the cluster's own cases, against real cluster-enabled redis-servers.
"""

from __future__ import annotations

import itertools
import json
import types
from typing import Any

import pytest
from redis.crc import key_slot
from redis.exceptions import NoScriptError

from flask_mcp_gevent.conditions import StoreUnavailable, StreamConflict
from flask_mcp_gevent.session import SessionChange
from flask_mcp_gevent.store import redis_connection
from flask_mcp_gevent.store.redis_keys import session_keys
from flask_mcp_gevent.store.redis_link import RedisLink
from flask_mcp_gevent.store.redis_scripts import SCRIPTS
from tests.redis_sentinel import MASTER_NAME, RedisSentinelSet
from tests.redis_server import RedisServer, free_port
from tests.support.stores import Stores, message, new_session, numbers, serve, take
from tests.support.waiting import wait_until

pytestmark = pytest.mark.redis


@pytest.fixture
def cluster_stores(redis_cluster):
    """A factory of RedisStore workers on the test run's cluster, emptied first."""
    redis_cluster.flush()
    stores = Stores("cluster", redis_cluster)
    yield stores
    stores.close()


@pytest.fixture
def masters_in_turn(monkeypatch):
    """Each new subscriber connection goes to the next master in turn; the masters' names, in the order used."""
    used: list[str] = []
    turn = itertools.count()

    def next_master(primaries: list[Any]) -> Any:
        node = sorted(primaries, key=lambda node: node.name)[next(turn) % len(primaries)]
        used.append(node.name)
        return node

    monkeypatch.setattr(redis_connection, "random", types.SimpleNamespace(choice=next_master))
    return used


def test_every_script_the_store_runs_keeps_all_its_keys_in_one_hash_slot(cluster_stores, monkeypatch):
    runs: list[tuple[str, list[str]]] = []
    run, run_each = RedisLink.run, RedisLink.run_each
    monkeypatch.setattr(RedisLink, "run", lambda link, name, keys, args:
                        runs.append((name, keys)) or run(link, name, keys, args))
    monkeypatch.setattr(RedisLink, "run_each", lambda link, name, each:
                        runs.extend((name, keys) for keys, _ in each) or run_each(link, name, each))
    worker = cluster_stores(MCP_MAX_SESSIONS=100)
    assert wait_until(worker.fleet.ready)
    session = new_session(worker)
    worker.sessions.create_session(type(session)(), owner="principal:{alice}", owner_limit=5)
    assert worker.sessions.get_session(session.id) is not None
    worker.sessions.update_session(session.id, SessionChange(assign={"log_level": "debug"}))
    subscription = worker.events.subscribe(session.id)
    worker.events.publish(session.id, message(1))
    worker.events.publish(session.id, message(2), token="token-1")
    assert numbers(take(subscription, 2)) == [1, 2]
    worker.claims.refresh()
    token = worker.sessions.take_call_slot(session.id, 2)
    worker.sessions.renew_call_leases()
    worker.sessions.give_back_call_slot(session.id, token)
    worker.fleet.registry_sync.replicate({"kind": "tool", "key": "echo", "action": "remove"})
    subscription.close()
    assert worker.sessions.session_count() == 2
    assert worker.sessions.close_session(session.id)

    assert {name for name, _ in runs} == set(SCRIPTS)
    for name, keys in runs:
        assert len({key_slot(key.encode()) for key in keys}) == 1, (name, keys)


def test_events_reach_workers_subscribed_to_every_master(cluster_stores, masters_in_turn):
    workers = [cluster_stores() for _ in range(3)]
    for worker in workers:
        assert wait_until(worker.fleet.ready)
    assert len(set(masters_in_turn)) == 3
    publisher = cluster_stores()
    for n in range(6):  # sessions on each master, streams on each worker
        session = new_session(publisher)
        holder = workers[n % 3]
        subscription = holder.events.subscribe(session.id)
        for event in range(5):
            publisher.events.publish(session.id, message(event))
        assert numbers(take(subscription, 5)) == list(range(5))
        subscription.close()


def test_an_exclusive_stream_conflicts_across_workers_on_different_masters(cluster_stores, masters_in_turn):
    holder, other = cluster_stores(), cluster_stores()
    assert wait_until(holder.fleet.ready) and wait_until(other.fleet.ready)
    client = holder.link.client
    listening_on = masters_in_turn[0]
    for _ in range(50):  # a session whose keys live on another master than the holder's subscriber connection
        session = new_session(holder)
        if client.get_node_from_key("mcp:session:{" + session.id + "}").name != listening_on:
            break
    first = holder.events.subscribe(session.id, exclusive=True)
    with pytest.raises(StreamConflict):
        other.events.subscribe(session.id, exclusive=True)
    first.close()
    other.events.subscribe(session.id, exclusive=True).close()


def test_a_control_message_reaches_every_worker_once(cluster_stores, masters_in_turn):
    workers = [cluster_stores() for _ in range(3)]
    servers = [serve(worker) for worker in workers]
    heard: list[list[Any]] = [[] for _ in workers]
    for server, worker, log in zip(servers, workers, heard, strict=True):
        server.listeners.deliver = log.append  # what this worker's listen streams are handed
        assert wait_until(worker.fleet.ready)
    first, second = {"method": "notifications/tools/list_changed"}, {"method": "notifications/prompts/list_changed"}
    servers[0].tell_every_worker(first)
    servers[1].tell_every_worker(second)
    # Each worker reads one connection in order: had the first come twice, it would be there before the second.
    assert wait_until(lambda: all(len(log) >= 2 for log in heard))
    assert all(sorted(log, key=str) == sorted([first, second], key=str) for log in heard), heard


def test_a_cluster_that_cannot_be_reached_is_an_outage_not_a_crash():
    stores = Stores("cluster", types.SimpleNamespace(url=f"redis://127.0.0.1:{free_port()}"))  # nothing listens there
    try:
        worker = stores(MCP_REDIS_TIMEOUT_S="0.5")
        with pytest.raises(StoreUnavailable):
            worker.sessions.get_session("0" * 32)
        with pytest.raises(StoreUnavailable):  # its token is made before any command: connecting fails there
            worker.sessions.take_call_slot("0" * 32, 1)
        assert not worker.fleet.ready()
    finally:
        stores.close()


def test_a_master_refusing_writes_for_want_of_replicas_is_an_outage_not_a_crash():
    # min-replicas-to-write: a master that lost its replicas answers NOREPLICAS to every write.
    with RedisServer(extra_args=("--min-replicas-to-write", "1", "--min-replicas-max-lag", "1")) as server:
        stores = Stores("redis", server)
        try:
            worker = stores()
            with pytest.raises(StoreUnavailable):
                new_session(worker)
            assert worker.sessions.get_session("0" * 32) is None  # reads still work
        finally:
            stores.close()


def test_a_script_missing_again_after_redis_pys_reload_is_an_outage_of_a_moment(redis_stores, monkeypatch):
    # The load went to one server and the run to another (the master moved between them): 503, not a crash.
    worker = redis_stores()
    assert wait_until(worker.fleet.ready)
    session = new_session(worker)

    def moved(*args, **kwargs):
        raise NoScriptError("No matching script. Please use EVAL.")

    monkeypatch.setattr(worker.link.multiplexer, "run", moved)  # under the link's outage guard
    with pytest.raises(StoreUnavailable):
        worker.events.publish(session.id, message(1))


def test_after_a_planned_failover_writes_and_the_subscriber_move_to_the_new_master_within_seconds():
    # SENTINEL FAILOVER promotes the replica while the old master lives on, taking writes until the Sentinels
    # get round to demoting it (about ten seconds): every worker must move by itself well before that.
    with RedisSentinelSet() as sentinels:
        stores = Stores("sentinel", sentinels)
        try:
            holder, publisher = stores(MCP_REDIS_TIMEOUT_S=1), stores(MCP_REDIS_TIMEOUT_S=1)
            assert wait_until(holder.fleet.ready) and wait_until(publisher.fleet.ready)
            session = new_session(publisher)
            subscription = holder.events.subscribe(session.id)
            sentinels.sentinels[0].client().execute_command("SENTINEL", "FAILOVER", MASTER_NAME)
            sentinels.wait_for_failover()
            new_master = sentinels.replica.client()
            replay = session_keys(session.id).replay
            published = iter(range(1000))

            def landed_on_the_new_master() -> bool:
                try:
                    publisher.events.publish(session.id, message(next(published)))
                except StoreUnavailable:
                    return False  # the moment the master moves (the 503 a client would get); try again
                return new_master.xlen(replay) > 0

            assert wait_until(landed_on_the_new_master, timeout=5)
            # From here on every event is on the new master, and the holder hears it there.
            after = [next(published) for _ in range(5)]
            for n in after:
                publisher.events.publish(session.id, message(n))
            heard = numbers(take(subscription, 1000, timeout=3))
            assert heard[-5:] == after
            assert [json.loads(fields[b"d"])["params"]["n"] for _, fields in new_master.xrange(replay)][-5:] == after
        finally:
            stores.close()


def test_a_claim_refresh_while_a_replacing_stream_attaches_leaves_the_new_stream_open(redis_stores, monkeypatch):
    # Slower attaches (a cluster asks every node who holds the claim first) let the refresher run mid-attach.
    worker = redis_stores()
    assert wait_until(worker.fleet.ready)
    session = new_session(worker)
    first = worker.events.subscribe(session.id)
    run = RedisLink.run

    def refresh_first(link, name, keys, args):
        if name == "attach":
            worker.claims.refresh()
        return run(link, name, keys, args)

    monkeypatch.setattr(RedisLink, "run", refresh_first)
    second = worker.events.subscribe(session.id)
    monkeypatch.setattr(RedisLink, "run", run)
    worker.events.publish(session.id, message(1))
    assert numbers(take(second, 1)) == [1]
    assert first.reason == "replaced by a newer stream" and second.reason is None

"""The test cluster's nodes start even when a port picked for them is taken before they bind it."""

from __future__ import annotations

import socket

import pytest

from tests import redis_cluster
from tests.redis_cluster import RedisClusterSet


@pytest.mark.redis
def test_a_node_whose_bus_port_was_taken_meanwhile_starts_on_other_ports(monkeypatch):
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    busy = taken.getsockname()[1]
    picks = iter([busy])
    real_free_port = redis_cluster.free_port
    # The first bus port handed out is one that something else holds by the time the node binds it.
    monkeypatch.setattr(redis_cluster, "free_port", lambda: next(picks, None) or real_free_port())
    cluster = RedisClusterSet(masters=1)
    try:
        assert f"--cluster-port {busy} " in " ".join(cluster.nodes[0].extra_args) + " "
        cluster._start_node(0)
        node = cluster.nodes[0]
        assert str(busy) not in node.extra_args  # a new node, on other ports
        assert node.client().ping()
    finally:
        cluster.cleanup()
        taken.close()


@pytest.mark.redis
def test_a_node_that_fails_for_another_reason_is_not_retried(monkeypatch):
    cluster = RedisClusterSet(masters=1)
    cluster.nodes[0].extra_args = (*cluster.nodes[0].extra_args, "--no-such-option", "1")
    first = cluster.nodes[0]
    try:
        with pytest.raises(RuntimeError):
            cluster._start_node(0)
        assert cluster.nodes[0] is first
    finally:
        cluster.cleanup()

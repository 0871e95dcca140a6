"""The rate limit counts messages: a batch is charged one per message, and refused whole when over."""

from __future__ import annotations

import pytest

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def test_a_batch_costs_one_per_message_and_a_refused_one_costs_nothing():
    from app import create_app

    client = create_app({"MCP_RATE_LIMIT": "5/minute"}).test_client()
    # No session, so each POST ends in 400 after the limiter: what matters is what it was charged.
    assert client.post("/mcp", json=[PING, PING, PING]).status_code == 400  # 3 of 5
    refused = client.post("/mcp", json=[PING, PING, PING])  # 3 more would make 6
    assert refused.status_code == 429
    assert "batch of 3" in refused.get_json()["error"]["message"]
    assert int(refused.headers["Retry-After"]) == refused.get_json()["error"]["data"]["retryAfter"]
    assert client.post("/mcp", json=[PING, PING]).status_code == 400  # 5 of 5: the refused batch cost nothing
    assert client.post("/mcp", json=PING).status_code == 429


def test_without_a_rate_limit_nothing_charges_batches():
    from app import create_app

    app = create_app({})
    assert app.extensions["mcp"].server.charge_batch is None
    client = app.test_client()
    assert all(client.post("/mcp", json=[PING] * 50).status_code != 429 for _ in range(5))


def test_on_sentinel_and_cluster_the_counters_live_where_the_store_does():
    from flask_mcp_gevent.config import Settings
    from flask_mcp_gevent.web.rate_limit import rate_limit_storage

    sentinel = Settings.from_mapping({"MCP_REDIS_SENTINELS": "10.0.0.1:26379,10.0.0.2:26379",
                                      "MCP_REDIS_SENTINEL_MASTER": "mcp", "MCP_REDIS_SENTINEL_PASSWORD": "s",
                                      "MCP_REDIS_URL": "redis://:p%40ss@/0"})
    uri, options = rate_limit_storage(sentinel)
    assert uri == "redis+sentinel://10.0.0.1:26379,10.0.0.2:26379/mcp"
    assert (options["password"], options["sentinel_kwargs"]["password"], options["use_replicas"]) == ("p@ss", "s",
                                                                                                      False)
    cluster = Settings.from_mapping({"MCP_REDIS_CLUSTER": "1", "MCP_REDIS_URL": "redis://10.0.0.3:7000"})
    assert rate_limit_storage(cluster)[0] == "redis+cluster://10.0.0.3:7000"


@pytest.mark.redis
def test_the_limit_counts_on_a_redis_cluster(redis_cluster):
    from app import create_app

    redis_cluster.flush()
    client = create_app({"MCP_RATE_LIMIT": "2/minute", "MCP_REDIS_CLUSTER": "1",
                         "MCP_REDIS_URL": redis_cluster.url}).test_client()
    assert [client.post("/mcp", json=PING).status_code for _ in range(3)] == [400, 400, 429]


def test_a_cluster_unreachable_at_startup_leaves_the_limit_per_worker_instead_of_failing_to_boot():
    from app import create_app
    from tests.redis_server import free_port

    client = create_app({"MCP_RATE_LIMIT": "2/minute", "MCP_REDIS_CLUSTER": "1",
                         "MCP_REDIS_URL": f"redis://127.0.0.1:{free_port()}"}).test_client()
    assert client.post("/mcp", json=PING).status_code != 429
    assert client.post("/mcp", json=PING).status_code != 429
    assert client.post("/mcp", json=PING).status_code == 429

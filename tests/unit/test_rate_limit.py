"""The rate limit counts messages: a batch is charged one per message, and refused whole when over."""

from __future__ import annotations

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
    assert app.extensions["mcp"].core.charge_batch is None
    client = app.test_client()
    assert all(client.post("/mcp", json=[PING] * 50).status_code != 429 for _ in range(5))

"""The README's "Adding MCP to your own Flask app" sample runs as written: its tool, its login and its route."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from flask import Blueprint, jsonify

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "README.md").read_text().split("## Adding MCP to your own Flask app", 1)[1].split("\n## ", 1)[0]
SAMPLE = re.search(r"```python\n(.*?)```", SECTION, re.DOTALL).group(1)  # type: ignore[union-attr]
JSON = {"Content-Type": "application/json", "Accept": "application/json"}
SIGNED_IN = "Bearer the-hosts-own-session"


def my_login(request: Any) -> Any:
    """The host's own login that the sample calls: a user for its session token, else None."""
    return SimpleNamespace(name="alice") if request.headers.get("Authorization") == SIGNED_IN else None


def orders_blueprint() -> Blueprint:
    """The host's existing route the sample exposes: orders.get_order, GET /orders/<int:order_id>."""
    orders = Blueprint("orders", __name__)

    @orders.get("/orders/<int:order_id>")
    def get_order(order_id: int) -> Any:
        """Get one order."""
        return jsonify({"id": order_id, "status": "shipped"})

    return orders


@pytest.fixture
def host_app():
    """The sample's app, with the route it exposes added before the line that exposes it."""
    before, exposing, after = SAMPLE.partition("mcp.expose_route(")
    assert exposing, "the sample exposes a route"
    namespace: dict[str, Any] = {"__name__": "readme_sample", "my_login": my_login}
    exec(before, namespace)  # noqa: S102 - the README's own code, as a reader would paste it
    namespace["app"].register_blueprint(orders_blueprint())
    exec(exposing + after, namespace)  # noqa: S102
    return namespace["app"]


def call(client, headers: dict[str, str], request_id: int, method: str, params: dict | None = None) -> Any:
    """POST one JSON-RPC request; return the response."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})}
    return client.post("/mcp", headers=headers, json=body)


def test_the_readme_flask_sample_serves_its_tool_and_its_route_to_a_signed_in_caller(host_app):
    client = host_app.test_client()
    signed_in = {**JSON, "Authorization": SIGNED_IN}
    opened = call(client, signed_in, 0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                      "clientInfo": {"name": "readme", "version": "0"}})
    assert opened.status_code == 200, opened.get_data()
    session = {**signed_in, "Mcp-Session-Id": opened.headers["Mcp-Session-Id"], "MCP-Protocol-Version": "2025-11-25"}
    added = call(client, session, 1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}).get_json()
    assert added["result"]["structuredContent"] == {"result": 5}
    order = call(client, session, 2, "tools/call", {"name": "orders.get_order", "arguments": {"order_id": 7}})
    order = order.get_json()
    assert order["result"]["structuredContent"] == {"id": 7, "status": "shipped"}


def test_the_readme_flask_sample_answers_401_to_a_caller_its_login_does_not_know(host_app):
    response = call(host_app.test_client(), JSON, 0, "initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "readme", "version": "0"}})
    assert response.status_code == 401

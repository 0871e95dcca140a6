"""The WSGI hot path answers POSTs exactly as the Flask route would, and only POSTs to the MCP endpoints."""

from __future__ import annotations

import json

import pytest

from app import create_app
from mcp_server.web.hot_path import HotPath

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
JSON = {"Content-Type": "application/json", "Accept": "application/json"}


def hot_path_of(app) -> HotPath:
    """The hot path, which sits inside the per-address connection limit."""
    return app.wsgi_app.wsgi


def hot_and_flask_apps():
    """Two apps alike but for the way in: the hot path, and Flask (forced by a CORS setting, which needs hooks)."""
    hot = create_app({})
    flask = create_app({"MCP_CORS_ORIGINS": "https://example.invalid"})
    assert hot_path_of(hot).enabled and not hot_path_of(flask).enabled
    return hot, flask


def exchange(app, requests):
    """Run POSTs in order on a fresh session and return (status, body, security headers) for each."""
    client = app.test_client()
    first = client.post("/mcp", json=INIT, headers={"Accept": "application/json"})
    session = first.headers["Mcp-Session-Id"]
    seen = []
    for path, body, headers in requests:
        headers = {**headers, "Mcp-Session-Id": session} if headers is not None else {}
        answer = client.post(path, data=body, headers=headers)
        payload = answer.get_data()
        seen.append((answer.status_code, json.loads(payload) if payload else None,
                     answer.headers.get("X-Content-Type-Options"), answer.headers.get("Cache-Control")))
    return seen


REQUESTS = [
    ("/mcp", json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}), JSON),
    ("/mcp", json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}), JSON),
    ("/mcp", json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                         "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}), JSON),
    ("/mcp", json.dumps({"jsonrpc": "2.0", "id": 4, "method": "nope"}), JSON),
    ("/mcp", "{not json", JSON),
    ("/mcp", "{}", {"Content-Type": "text/plain"}),
    ("/mcp", json.dumps({"jsonrpc": "2.0", "id": None, "method": "ping"}), JSON),
    ("/mcp?session_id=" + "0" * 32, json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}), JSON),
    ("/messages", json.dumps({"jsonrpc": "2.0", "id": 6, "method": "ping"}), JSON),
    ("/mcp", json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping"}), {**JSON, "Origin": "https://evil.example"}),
    ("/mcp", json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"}), None),
]


def test_hot_path_and_flask_route_give_the_same_answers():
    hot, flask = hot_and_flask_apps()
    assert exchange(hot, REQUESTS) == exchange(flask, REQUESTS)


def test_every_hot_answer_carries_the_security_headers():
    hot, _ = hot_and_flask_apps()
    for status, _, nosniff, cache in exchange(hot, REQUESTS):
        assert nosniff == "nosniff" and cache == "no-store", status


@pytest.mark.parametrize("method, path", [("GET", "/healthz"), ("GET", "/mcp"), ("DELETE", "/mcp"),
                                          ("POST", "/elsewhere"), ("PUT", "/mcp")])
def test_everything_but_hot_posts_goes_to_flask(method, path):
    app = create_app({})
    seen = []
    hot_path = hot_path_of(app)
    original = hot_path.flask_wsgi
    hot_path.flask_wsgi = lambda environ, start_response: seen.append(environ["PATH_INFO"]) or original(
        environ, start_response)
    client = app.test_client()
    if method == "GET" and path == "/mcp":
        with client.get(path, buffered=False) as answer:
            answer.close()
    else:
        client.open(path, method=method)
    assert seen == [path]


def test_hot_posts_never_reach_flask():
    app = create_app({})
    hot_path = hot_path_of(app)
    hot_path.flask_wsgi = lambda environ, start_response: pytest.fail("a hot POST reached Flask")
    answer = app.test_client().post("/mcp", json=INIT, headers={"Accept": "application/json"})
    assert answer.status_code == 200 and answer.json["result"]["protocolVersion"] == "2025-06-18"


def test_a_bug_on_the_hot_path_is_a_json_500_with_only_a_correlation_id(monkeypatch):
    app = create_app({})

    def broken(core, environ, principal):
        raise RuntimeError("secret detail at /srv/app/module.py")

    monkeypatch.setattr("mcp_server.web.hot_path.handle_post", broken)
    answer = app.test_client().post("/mcp", json=INIT, headers={"Accept": "application/json"})
    assert answer.status_code == 500
    assert answer.json["error"]["code"] == -32603 and set(answer.json["error"]["data"]) == {"correlationId"}
    assert b"secret" not in answer.get_data() and b"/srv" not in answer.get_data()

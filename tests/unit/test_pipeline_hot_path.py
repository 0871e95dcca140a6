"""The WSGI hot path answers POSTs exactly as the Flask route would, and only POSTs to the MCP endpoints."""

from __future__ import annotations

import json

import pytest

from app import create_app
from flask_mcp_gevent.auth.api_keys import hash_key, new_key
from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.web.mcp_app import server_of
from flask_mcp_gevent.web.pipeline import HotPath
from tests.oauth_issuer import AUDIENCE, ISSUER, TestIssuer

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
JSON = {"Content-Type": "application/json", "Accept": "application/json"}


def hot_path_of(app) -> HotPath:
    """The hot path, which sits inside the per-address connection limit and the method gate."""
    layer = app.wsgi_app
    while not isinstance(layer, HotPath):
        layer = layer.wsgi
    return layer


def hot_and_flask_apps(config=None):
    """Two apps alike but for the way in: the hot path, and Flask (the hot path switched off)."""
    hot = create_app(dict(config or {}))
    flask = create_app(dict(config or {}))
    hot_path_of(flask).enabled = False
    assert hot_path_of(hot).enabled
    return hot, flask


def seen_answer(answer):
    """What a client sees of an answer: status, JSON body and every header."""
    payload = answer.get_data()
    return answer.status_code, json.loads(payload) if payload else None, sorted(answer.headers.items())


def exchange(app, requests):
    """Run POSTs in order on a fresh session and return (status, body, security headers) for each."""
    client = app.test_client()
    first = client.post("/mcp", json=INIT, headers={"Accept": "application/json"})
    session = first.headers["Mcp-Session-Id"]
    seen = []
    for path, body, headers in requests:
        headers = {**headers, "Mcp-Session-Id": session} if headers is not None else {}
        seen.append(seen_answer(client.post(path, data=body, headers=headers)))
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
    for status, _, headers in exchange(hot, REQUESTS):
        assert ("X-Content-Type-Options", "nosniff") in headers and ("Cache-Control", "no-store") in headers, status


def test_the_equivalence_compares_every_header():
    hot, _ = hot_and_flask_apps()
    _, _, headers = exchange(hot, REQUESTS[1:2])[0]
    assert {"Content-Type", "Content-Length", "X-Frame-Options", "Content-Security-Policy"} <= {n for n, _ in headers}


def test_a_foreign_origin_gets_the_same_403_both_ways():
    hot, flask = hot_and_flask_apps()
    answers = [seen_answer(app.test_client().post("/mcp", json=INIT, headers={**JSON, "Origin": "https://evil.example"}))
               for app in (hot, flask)]
    assert answers[0] == answers[1] and answers[0][0] == 403


@pytest.fixture
def keys_file(tmp_path):
    """An API keys file with one key, for alice; returns (path, key)."""
    key = new_key()
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({hash_key(key): {"principal": "alice", "tools": ["*"]}}))
    return path, key


def test_without_credentials_both_ways_answer_401_with_the_same_challenge(keys_file):
    hot, flask = hot_and_flask_apps({"MCP_API_KEYS_FILE": str(keys_file[0])})
    for credentials in ({}, {"Authorization": "Bearer " + new_key()}):
        answers = [seen_answer(app.test_client().post("/mcp", json=INIT, headers={**JSON, **credentials}))
                   for app in (hot, flask)]
        assert answers[0] == answers[1] and answers[0][0] == 401
        assert any(name == "WWW-Authenticate" and value.startswith("Bearer ") for name, value in answers[0][2])


def test_with_credentials_both_ways_give_the_same_answers(keys_file):
    hot, flask = hot_and_flask_apps({"MCP_API_KEYS_FILE": str(keys_file[0])})
    auth = {"Authorization": "Bearer " + keys_file[1]}
    requests = [(path, body, {**headers, **auth}) for path, body, headers in REQUESTS if headers is not None]
    answers = [exchange_with(app, requests, auth) for app in (hot, flask)]
    assert answers[0] == answers[1] and answers[0][1][0] == 200


def exchange_with(app, requests, auth):
    """exchange(), with credentials on the initialize too."""
    client = app.test_client()
    first = client.post("/mcp", json=INIT, headers={"Accept": "application/json", **auth})
    session = first.headers["Mcp-Session-Id"]
    return [seen_answer(client.post(path, data=body, headers={**headers, "Mcp-Session-Id": session}))
            for path, body, headers in requests]


def test_a_token_without_the_required_scope_gets_the_same_403_both_ways(tmp_path):
    issuer = TestIssuer()
    hot, flask = hot_and_flask_apps({
        "MCP_OAUTH_JWKS_URL": str(issuer.write_jwks(tmp_path / "jwks.json")), "MCP_OAUTH_ISSUER": ISSUER,
        "MCP_OAUTH_AUDIENCE": AUDIENCE, "MCP_OAUTH_REQUIRED_SCOPES": "mcp"})
    headers = {**JSON, "Authorization": "Bearer " + issuer.token(scopes="tools:*")}
    answers = [seen_answer(app.test_client().post("/mcp", json=INIT, headers=headers)) for app in (hot, flask)]
    assert answers[0] == answers[1] and answers[0][0] == 403
    assert any(name == "WWW-Authenticate" and "insufficient_scope" in value for name, value in answers[0][2])


def test_with_the_store_down_both_ways_answer_the_same_503_with_retry_after(monkeypatch):
    hot, flask = hot_and_flask_apps()
    answers = []
    for app in (hot, flask):
        client = app.test_client()
        session = client.post("/mcp", json=INIT, headers={"Accept": "application/json"}).headers["Mcp-Session-Id"]

        def store_down(*args, **kwargs):
            raise StoreUnavailable("connection refused")

        monkeypatch.setattr(server_of(app).sessions, "get_session", store_down)
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        answers.append(seen_answer(client.post("/mcp", json=ping, headers={**JSON, "Mcp-Session-Id": session})))
        answers.append(seen_answer(client.post("/mcp?session_id=" + session, json=ping, headers=JSON)))
    assert answers[:2] == answers[2:]
    for status, _, headers in answers:
        assert status == 503 and dict(headers)["Retry-After"]


@pytest.mark.parametrize("method, path", [("GET", "/healthz"), ("GET", "/mcp"), ("DELETE", "/mcp"),
                                          ("POST", "/elsewhere"), ("OPTIONS", "/mcp"), ("PUT", "/elsewhere")])
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

    def broken(server, environ, principal):
        raise RuntimeError("secret detail at /srv/app/module.py")

    monkeypatch.setattr("flask_mcp_gevent.web.pipeline.handle_post", broken)
    answer = app.test_client().post("/mcp", json=INIT, headers={"Accept": "application/json"})
    assert answer.status_code == 500
    assert answer.json["error"]["code"] == -32603 and set(answer.json["error"]["data"]) == {"correlationId"}
    assert b"secret" not in answer.get_data() and b"/srv" not in answer.get_data()

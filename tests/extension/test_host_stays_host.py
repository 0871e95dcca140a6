"""The host stays the host: MCP's handlers answer MCP's routes only, collisions stop the start, one extensions key,
settings from app.config, CORS preflights and Flask-WTF's CSRFProtect beside a principal loader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from flask import Blueprint, Flask, abort

from flask_mcp_gevent import MCP
from flask_mcp_gevent.config import ConfigError
from tests.extension.test_host_app import McpSession

HERE = Path(__file__).resolve().parent


def loader_app(settings: dict[str, Any] | None = None) -> Flask:
    """A host app with a loader that knows one token."""
    app = Flask(__name__)
    mcp = MCP(app, settings=settings)

    @mcp.principal_loader
    def load(incoming: Any) -> dict[str, Any] | None:
        known = incoming.headers.get("Authorization") == "Bearer tok"
        return {"principal": "alice", "tools": ["*"], "resources": [], "prompts": []} if known else None

    return app


# collisions
def test_a_route_already_at_the_mcp_path_stops_the_start_naming_it():
    app = Flask(__name__)

    @app.post("/mcp")
    def my_mcp() -> str:
        return "mine"

    with pytest.raises(ConfigError, match="MCP serves /mcp, but the app's route 'my_mcp'"):
        MCP(app)


def test_a_route_added_at_an_mcp_path_after_mcp_stops_the_start_naming_it():
    app = Flask(__name__)
    MCP(app)
    try:
        with pytest.raises(ConfigError, match="MCP serves /mcp/healthz, but the app's route 'health'"):
            app.add_url_rule("/mcp/healthz", "health", lambda: "ok")
        app.add_url_rule("/elsewhere", "elsewhere", lambda: "ok")  # any other path is the host's
    finally:
        app.extensions["mcp"].shutdown()


def test_mcp_given_a_blueprint_stops_the_start_saying_it_takes_the_app():
    with pytest.raises(ConfigError, match="is not a Flask app; give MCP the app itself"):
        MCP(Blueprint("shop", __name__))


def test_a_second_mcp_on_one_app_stops_the_start_naming_it():
    app = Flask(__name__)
    MCP(app)
    try:
        with pytest.raises(ConfigError, match="MCP is already on app"):
            MCP(app)
        mcp = MCP()
        with pytest.raises(ConfigError, match="MCP is already on app"):
            mcp.init_app(app)
    finally:
        app.extensions["mcp"].shutdown()


def test_one_mcp_object_given_the_same_app_twice_stops_there_too():
    app, mcp = Flask(__name__), MCP()
    mcp.init_app(app)
    try:
        with pytest.raises(ConfigError, match="MCP is already on app"):
            mcp.init_app(app)
    finally:
        app.extensions["mcp"].shutdown()


def test_mcp_sets_one_extensions_key():
    app = Flask(__name__)
    before = set(app.extensions)
    MCP(app, settings={"rate_limit": "100/minute", "cors_origins": ["https://app.example"]})
    try:
        # "limiter" is flask-limiter's own set of every Limiter on the app, a host's included.
        assert set(app.extensions) - before - {"limiter"} == {"mcp"}
    finally:
        app.extensions["mcp"].shutdown()


# error handlers
def test_mcps_error_handlers_answer_mcps_routes_only():
    app = Flask(__name__)

    @app.get("/boom")
    def boom() -> str:
        abort(418)

    MCP(app)
    try:
        client = app.test_client()
        host = client.get("/boom")
        assert host.status_code == 418 and host.mimetype == "text/html"  # Flask's own page, not MCP's JSON
        assert client.get("/missing").mimetype == "text/html"
        assert client.get("/mcp/nothing-here").mimetype == "text/html"  # not an MCP route either
        refused = client.post("/mcp", data="{", headers={"Content-Type": "application/json"})
        assert refused.get_json()["error"]["code"] == -32700  # an MCP route: MCP's JSON
    finally:
        app.extensions["mcp"].shutdown()


@pytest.mark.parametrize(("path", "method", "allow"), [
    ("/mcp", "PUT", "GET, POST, DELETE, OPTIONS"), ("/mcp", "PROPFIND", "GET, POST, DELETE, OPTIONS"),
    ("/mcp/sse", "POST", "GET, OPTIONS"), ("/mcp/messages", "GET", "POST, OPTIONS")])
def test_a_method_an_mcp_path_does_not_serve_gets_mcps_json_405_on_a_host(path, method, allow):
    app = Flask(__name__)

    @app.errorhandler(405)
    def host_page(error: Exception) -> tuple[str, int]:
        return "the host's own 405 page", 405

    @app.get("/elsewhere")
    def elsewhere() -> str:
        return "the host's own route"

    MCP(app)
    try:
        client = app.test_client()
        refused = client.open(path, method=method)
        assert refused.status_code == 405 and refused.headers["Allow"] == allow
        assert f"Method {method} is not allowed on {path}" in refused.get_json()["error"]["message"]
        assert refused.headers["X-Content-Type-Options"] == "nosniff"
        assert client.put("/elsewhere").data == b"the host's own 405 page"  # the host's routes keep the host's page
    finally:
        app.extensions["mcp"].shutdown()


# settings from app.config
def test_mcp_keys_of_app_config_are_read_and_settings_given_win():
    app = Flask(__name__)
    app.config.update(MCP_PAGE_SIZE=7, MCP_SERVER_NAME="from-config", MCP_CONSOLE="0",
                      MCP_ALLOWED_ORIGINS=["https://a.example"])
    MCP(app, settings={"server_name": "given"})
    try:
        settings = app.extensions["mcp"].settings
        assert (settings.page_size, settings.server_name, settings.console) == (7, "given", False)
        assert settings.allowed_origins == ("https://a.example",)
    finally:
        app.extensions["mcp"].shutdown()


def test_a_bad_value_in_app_config_stops_the_start_naming_the_key():
    app = Flask(__name__)
    app.config["MCP_PAGE_SIZE"] = "many"
    with pytest.raises(ConfigError, match="MCP_PAGE_SIZE"):
        MCP(app)


def test_app_config_wins_over_the_environment_and_the_environment_over_defaults(tmp_path):
    script = tmp_path / "order.py"
    script.write_text(
        "from flask import Flask\nfrom flask_mcp_gevent import MCP\n"
        "app = Flask(__name__)\napp.config['MCP_PAGE_SIZE'] = 7\nMCP(app)\n"
        "s = app.extensions['mcp'].settings\nprint(s.page_size, s.server_name)\n")
    env = {**os.environ, "MCP_PAGE_SIZE": "3", "MCP_SERVER_NAME": "from-env",
           "PYTHONPATH": os.pathsep.join([str(HERE.parent.parent), os.environ.get("PYTHONPATH", "")])}
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert ran.stdout.split() == ["7", "from-env"], ran.stderr


# CORS and CSRF beside a loader
def test_a_cors_preflight_succeeds_for_an_allowed_origin_with_a_loader():
    app = loader_app({"cors_origins": ["https://app.example"]})
    try:
        preflight = app.test_client().options("/mcp", headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        assert preflight.status_code == 200
        assert preflight.headers["Access-Control-Allow-Origin"] == "https://app.example"
        assert "Authorization" in preflight.headers["Access-Control-Allow-Headers"]
        foreign = app.test_client().options("/mcp", headers={
            "Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
        assert foreign.status_code == 403
    finally:
        app.extensions["mcp"].shutdown()


def test_a_cors_preflight_allows_every_header_a_2026_07_28_request_sends():
    app = Flask(__name__)
    mcp = MCP(app, settings={"cors_origins": ["https://app.example"]})

    @mcp.tool(input_schema={"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                            "required": ["region"]})
    def where_to(region: str) -> str:
        """Say the region."""
        return region

    sent = {"Origin": "https://app.example", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call", "Mcp-Name": "where_to", "Mcp-Param-Region": "eu"}
    try:
        client = app.test_client()
        preflight = client.options("/mcp", headers={
            "Origin": "https://app.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": ", ".join(name.lower() for name in sent if name != "Origin")})
        assert preflight.status_code == 200
        allowed = {name.strip().lower() for name in preflight.headers["Access-Control-Allow-Headers"].split(",")}
        # A browser sends the request only if every header it asked for is allowed (CORS-safelisted ones aside).
        assert {name.lower() for name in sent} - {"origin", "accept"} <= allowed
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        answer = client.post("/mcp", headers=sent, data=json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "where_to", "arguments": {"region": "eu"}, "_meta": meta}}))
        assert answer.get_json()["result"]["content"][0]["text"] == "eu", answer.get_json()
        assert answer.headers["Access-Control-Allow-Origin"] == "https://app.example"
    finally:
        app.extensions["mcp"].shutdown()


@pytest.mark.parametrize("order", ["csrf-first", "mcp-first"])
def test_mcp_works_beside_csrf_protect_which_still_guards_the_hosts_forms(order):
    flask_wtf = pytest.importorskip("flask_wtf.csrf")
    app = Flask(__name__)
    app.config["SECRET_KEY"] = "test"

    @app.post("/form")
    def form() -> str:
        return "posted"

    if order == "csrf-first":
        flask_wtf.CSRFProtect(app)
    mcp = MCP(app)

    @mcp.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    if order == "mcp-first":
        flask_wtf.CSRFProtect(app)
    try:
        client = app.test_client()
        session = McpSession(client, None)
        assert session.last_status == 200
        assert session.call("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}
        assert client.post("/form", data={"x": "1"}).status_code == 400  # the host's forms stay protected
    finally:
        app.extensions["mcp"].shutdown()


def test_the_hosts_own_json_api_views_keep_their_csrf_exemption_as_the_host_set_it():
    flask_wtf = pytest.importorskip("flask_wtf.csrf")
    app = Flask(__name__)
    app.config["SECRET_KEY"] = "test"
    csrf = flask_wtf.CSRFProtect(app)

    @app.post("/api/notes")
    @csrf.exempt
    def create_note() -> Any:
        return {"created": True}, 201

    @app.post("/notes")
    def create_note_by_form() -> Any:
        return {"created": True}, 201

    mcp = MCP(app)
    mcp.expose_route("create_note", body_schema={"type": "object"})
    mcp.expose_route("create_note_by_form", body_schema={"type": "object"})
    try:
        session = McpSession(app.test_client(), None)
        assert session.call("create_note", {"body": {}})["structuredContent"] == {"created": True}
        refused = session.call("create_note_by_form", {"body": {}})
        assert refused["isError"] is True and "HTTP 400" in refused["content"][0]["text"]
    finally:
        app.extensions["mcp"].shutdown()


def test_the_loader_is_not_asked_about_a_preflight():
    app = Flask(__name__)
    mcp = MCP(app, settings={"cors_origins": ["https://app.example"]})
    asked: list[str] = []

    @mcp.principal_loader
    def load(incoming: Any) -> None:
        asked.append(incoming.method)
        return None

    try:
        app.test_client().options("/mcp", headers={"Origin": "https://app.example",
                                                   "Access-Control-Request-Method": "POST"})
        app.test_client().post("/mcp", data=json.dumps({}), headers={"Content-Type": "application/json"})
        assert asked == ["POST"]
    finally:
        app.extensions["mcp"].shutdown()

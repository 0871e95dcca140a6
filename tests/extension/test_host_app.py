"""MCP added to an existing Flask app (flask_mcp_gevent.extension.MCP), driven with Flask's test client.

The host app (tests/extension/host_app.py) has its own routes, login and 404 page; these tests check that
they stay its own, that the principal loader decides who may use what, and that routes made tools run
through the host's whole request handling as the MCP caller.
"""

from __future__ import annotations

import json
import time
from typing import Any

import gevent
import pytest
from flask import Flask
from flask.testing import FlaskClient

from flask_mcp_gevent import MCP
from flask_mcp_gevent.config import ConfigError
from flask_mcp_gevent.toolkit.checks import RegistryError
from tests.extension.host_app import create_app

VERSION = "2025-06-18"


class McpSession:
    """A Streamable HTTP session over Flask's test client, as one caller (a token of the host's, or none)."""

    def __init__(self, client: FlaskClient, token: str | None, path: str = "/mcp") -> None:
        self.client, self.path = client, path
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                        "MCP-Protocol-Version": VERSION}
        if token is not None:
            self.headers["Authorization"] = f"Bearer {token}"
        self.last_status = 0
        opened = self.post("initialize", {"protocolVersion": VERSION, "capabilities": {},
                                          "clientInfo": {"name": "test", "version": "1"}})
        if self.last_status == 200:
            self.headers["Mcp-Session-Id"] = self.session_id
        self.opened = opened

    def post(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request; return its JSON answer (a JSON-RPC response or an HTTP refusal's body)."""
        response = self.client.post(self.path, headers=self.headers,
                                    data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        self.last_status = response.status_code
        self.last_headers = response.headers
        self.session_id = response.headers.get("Mcp-Session-Id", "")
        return response.get_json()

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """tools/call: the result (or the error)."""
        answer = self.post("tools/call", {"name": name, "arguments": arguments})
        return answer.get("result") or answer["error"]

    def tool_names(self) -> set[str]:
        """The names tools/list gives this caller."""
        return {tool["name"] for tool in self.post("tools/list", {})["result"]["tools"]}


@pytest.fixture
def app():
    host = create_app()
    yield host
    host.extensions["mcp"].shutdown()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


# the host stays the host's
def test_the_hosts_own_routes_still_answer(client):
    assert client.get("/").get_data(as_text=True) == "the host's home page"
    assert client.get("/orders/1").status_code == 401  # its own login, not MCP's
    assert client.get("/orders/1", headers={"Authorization": "Bearer tok-bob"}).get_json()["item"] == "tea"


def test_the_hosts_own_error_pages_and_headers_stay_its_own(client):
    missing = client.get("/no-such-page")
    assert missing.status_code == 404 and missing.get_json() == {"error": "no such thing here"}
    assert "Content-Security-Policy" not in client.get("/").headers


def test_mcps_own_pages_live_under_its_path(client):
    assert client.get("/mcp/healthz").get_json() == {"status": "ok"}
    assert client.get("/mcp/metrics").status_code == 200
    page = client.get("/mcp/console")
    assert page.status_code == 200 and 'content="/mcp"' in page.get_data(as_text=True)
    assert client.get("/mcp/console/app.js").status_code == 200
    assert client.get("/healthz").status_code == 404 and client.get("/console").status_code == 404


def test_an_mcp_error_on_the_host_is_json(client):
    refused = client.post("/mcp", data="not json", headers={"Authorization": "Bearer tok-alice",
                                                            "Content-Type": "application/json"})
    assert refused.status_code == 400 and refused.get_json()["error"]["code"] == -32700


# principal_loader
def test_a_caller_the_loader_does_not_know_gets_401_as_an_unknown_api_key_would(client):
    session = McpSession(client, "tok-nobody")
    assert session.last_status == 401
    assert session.last_headers["WWW-Authenticate"] == 'Bearer realm="mcp"'
    assert session.opened["error"]["message"].startswith("Unauthorized:")
    assert McpSession(client, None).last_status == 401


def test_the_loaders_principal_gets_its_grants(client):
    alice, bob = McpSession(client, "tok-alice"), McpSession(client, "tok-bob")
    assert {"add", "get_order", "create_order", "delete_order", "file_info"} <= alice.tool_names()
    assert bob.tool_names() == {"add", "get_order", "delete_order"}
    assert bob.call("add", {"a": 2, "b": 3})["structuredContent"] == {"result": 5}
    assert bob.call("create_order", {"shelf": "top", "body": {"item": "x", "quantity": 1}})["code"] == -32001


def test_a_loader_answer_of_the_wrong_shape_is_a_500_not_a_pass():
    app = Flask(__name__)
    mcp = MCP(app)

    @mcp.principal_loader
    def load(request: Any) -> dict[str, Any]:
        return {"principal": "has spaces", "tools": ["*"]}

    try:
        assert McpSession(app.test_client(), None).last_status == 500
    finally:
        app.extensions["mcp"].shutdown()


# tools, resources and prompts of a host app
def test_declarations_made_after_init_app_reach_the_app(client):
    alice = McpSession(client, "tok-alice")
    assert alice.call("add", {"a": 4})["content"] == [{"type": "text", "text": "4"}]
    [contents] = alice.post("resources/read", {"uri": "config://host"})["result"]["contents"]
    assert contents["mimeType"] == "application/json" and json.loads(contents["text"]) == {"orders": 1}
    prompt = alice.post("prompts/list", {})["result"]["prompts"][0]
    assert prompt["arguments"] == [{"name": "code", "description": "The code to review.", "required": True}]


def test_two_mcp_objects_in_one_process_serve_their_own_tools():
    first, second = Flask("first"), Flask("second")
    mcp_one, mcp_two = MCP(first), MCP(second)

    @mcp_one.tool
    def only_in_first(x: int) -> int:
        """One."""
        return x

    @mcp_two.tool
    def only_in_second(x: int) -> int:
        """Two."""
        return x

    try:
        assert McpSession(first.test_client(), None).tool_names() == {"only_in_first"}
        assert McpSession(second.test_client(), None).tool_names() == {"only_in_second"}
    finally:
        first.extensions["mcp"].shutdown()
        second.extensions["mcp"].shutdown()


def test_a_host_app_does_not_serve_the_templates_example_tools():
    app = Flask(__name__)
    MCP(app)
    try:
        assert McpSession(app.test_client(), None).tool_names() == set()
    finally:
        app.extensions["mcp"].shutdown()


def test_one_mcp_object_serves_each_app_a_factory_builds():
    mcp = MCP()

    @mcp.tool
    def shared(x: int) -> int:
        """Shared."""
        return x

    apps = [Flask(f"app{n}") for n in range(2)]
    for each in apps:
        mcp.init_app(each)
    try:
        assert [McpSession(each.test_client(), None).tool_names() for each in apps] == [{"shared"}, {"shared"}]
    finally:
        for each in apps:
            each.extensions["mcp"].shutdown()


def test_settings_are_lower_case_names_over_the_environment():
    app = Flask(__name__)
    MCP(app, path="/ai", settings={"page_size": 7, "console": False})
    try:
        assert app.extensions["mcp"].settings.page_size == 7
        assert app.test_client().get("/ai/console").status_code == 404
        assert app.test_client().get("/ai/healthz").status_code == 200
    finally:
        app.extensions["mcp"].shutdown()
    with pytest.raises(ConfigError, match="unknown setting.*PAGESIZE"):
        MCP(Flask(__name__), settings={"PAGESIZE": 7})


# routes made tools
def test_url_converters_give_the_variables_their_types(client):
    alice = McpSession(client, "tok-alice")
    tools = {tool["name"]: tool for tool in alice.post("tools/list", {})["result"]["tools"]}
    properties = tools["file_info"]["inputSchema"]["properties"]
    assert properties["name"]["type"] == "string" and "pattern" not in properties["name"]  # path: slashes allowed
    assert properties["ref"]["format"] == "uuid"
    assert properties["weight"]["type"] == "number"
    assert properties["size"]["enum"] == ["large", "small"]
    assert tools["get_order"]["inputSchema"]["properties"]["order_id"]["type"] == "integer"
    assert tools["get_order"]["annotations"] == {"readOnlyHint": True}
    assert tools["delete_order"]["annotations"] == {"destructiveHint": True}
    answer = alice.call("file_info", {"name": "a/b.txt", "ref": "12345678-1234-5678-1234-567812345678",
                                      "weight": 1.5, "size": "large"})
    assert answer["structuredContent"] == {"name": "a/b.txt", "ref": "12345678-1234-5678-1234-567812345678",
                                           "weight": 1.5, "size": "large"}


def test_a_wrong_url_variable_type_is_refused_before_the_route_runs(client):
    answer = McpSession(client, "tok-alice").call("get_order", {"order_id": "one"})
    assert answer.get("isError") is True or answer.get("code") == -32602


def test_the_body_schema_is_the_body_property_and_the_body_reaches_the_route(client):
    alice = McpSession(client, "tok-alice")
    schema = {tool["name"]: tool for tool in alice.post("tools/list", {})["result"]["tools"]}["create_order"][
        "inputSchema"]
    assert schema["required"] == ["shelf", "body"] and schema["properties"]["body"]["required"] == ["item", "quantity"]
    created = alice.call("create_order", {"shelf": "top", "body": {"item": "jam", "quantity": 3}})
    assert created["isError"] is False
    assert created["structuredContent"] == {"id": 2, "shelf": "top", "item": "jam", "quantity": 3, "owner": "alice"}


def test_a_route_runs_as_the_mcp_caller_through_the_hosts_before_request(client):
    alice = McpSession(client, "tok-alice")
    assert alice.call("get_order", {"order_id": 1})["structuredContent"]["seen_by"] == "alice"
    bob = McpSession(client, "tok-bob")
    assert bob.call("get_order", {"order_id": 1})["structuredContent"]["seen_by"] == "bob"
    # MCP lets bob call delete_order; the host's own before_request does not let him delete.
    refused = bob.call("delete_order", {"order_id": 1})
    assert refused["isError"] is True and "HTTP 403" in refused["content"][0]["text"]
    assert refused["structuredContent"] == {"status": 403, "body": {"error": "bob may not change orders"}}


def test_the_hosts_error_handler_answers_and_the_status_makes_an_error_result(client):
    answer = McpSession(client, "tok-alice").call("get_order", {"order_id": 99})
    assert answer["isError"] is True
    assert answer["content"][0]["text"].startswith("GET /orders/99 answered HTTP 404 Not Found")
    assert answer["structuredContent"]["body"] == {"error": "no such thing here"}  # the host's own 404 page


def test_without_a_known_caller_a_route_gets_no_credentials():
    app = Flask(__name__)

    @app.get("/secret")
    def secret() -> Any:
        from flask import request
        return {"authorization": request.headers.get("Authorization")}

    mcp = MCP(app)  # authentication off: every caller is anonymous, so none's credentials may be reused
    mcp.expose_route("secret")
    try:
        answer = McpSession(app.test_client(), "anything").call("secret", {})
        assert answer["structuredContent"] == {"authorization": None}
    finally:
        app.extensions["mcp"].shutdown()


def test_nothing_else_of_the_app_is_exposed(client):
    assert McpSession(client, "tok-alice").tool_names() == {"add", "get_order", "create_order", "delete_order",
                                                              "file_info"}


def test_exposing_a_route_the_app_lacks_or_an_ambiguous_one_is_refused():
    app = Flask(__name__)

    @app.route("/both", methods=["GET", "POST"])
    def both() -> str:
        return ""

    mcp = MCP(app)
    try:
        with pytest.raises(RegistryError, match="no such endpoint"):
            mcp.expose_route("nowhere")
        with pytest.raises(RegistryError, match="choose one with method="):
            mcp.expose_route("both")
        with pytest.raises(RegistryError, match="sends no body"):
            mcp.expose_route("both", method="GET", body_schema={"type": "object"})
        mcp.expose_route("both", method="POST", name="post_both")
    finally:
        app.extensions["mcp"].shutdown()


# tasks on a mounted app
def test_a_task_tool_of_a_host_app_runs_as_a_task_on_2026_07_28():
    host = Flask(__name__)
    mcp = MCP(host)

    @mcp.tool(task="optional")
    def slow_sum(a: int, b: int) -> int:
        """Add two integers, as a task when the client asks."""
        return a + b

    client = host.test_client()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}

    def send(method: str, params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                   "Mcp-Method": method, **({"Mcp-Name": name} if name else {})}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        return client.post("/mcp", headers=headers, json=body).get_json()

    try:
        created = send("tools/call", {"name": "slow_sum", "arguments": {"a": 2, "b": 3}}, "slow_sum")["result"]
        assert created["resultType"] == "task"
        task_id = created["taskId"]
        deadline = time.monotonic() + 10
        while (task := send("tasks/get", {"taskId": task_id}, task_id)["result"])["status"] != "completed":
            assert time.monotonic() < deadline, task
            gevent.sleep(0.01)  # the task's greenlet runs while this one waits
        assert task["result"]["structuredContent"] == {"result": 5}
    finally:
        host.extensions["mcp"].shutdown()

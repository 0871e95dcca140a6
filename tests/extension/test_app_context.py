"""Every MCP handler runs inside a fresh application context of the host app (flask_mcp_gevent/web/app_context.py).

A tiny host app's tool, resource, prompt and completer each record what they see of Flask: an app context of
this app, no request context (the MCP POST's request is not theirs), and a `g` of their own, empty at the start
of each call (neither the previous call's mark nor the host's before_request mark on the MCP request's `g`). The
host's teardown_appcontext records the mark of the `g` it tears down, so each call's context is seen to end once,
after the call. Checked on Streamable HTTP, on 2026-07-28 (answered in place, and with a progressToken in a
greenlet of its own), in a task and in an input round's retry; and a Server without an app still runs tools.
"""

from __future__ import annotations

import json
import time
from typing import Any

import gevent
import pytest
from flask import Flask, current_app, g, has_app_context, has_request_context
from flask.testing import FlaskClient

from flask_mcp_gevent import MCP
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.stateless.metadata import ephemeral_session
from flask_mcp_gevent.toolkit.context import Context
from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.toolkit.specs import PromptArgument, prompt, spec_of, tool

SESSION_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
ACCEPT = "application/json, text/event-stream"
WAIT_S = 10.0
# Each kind of handler, called as a client calls it: method, params, and the Mcp-Name header's value.
CALLS: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "tool": ("tools/call", {"name": "look", "arguments": {}}, "look"),
    "resource": ("resources/read", {"uri": "host://look"}, "host://look"),
    "prompt": ("prompts/get", {"name": "look_prompt"}, "look_prompt"),
    "completer": ("completion/complete", {"ref": {"type": "ref/prompt", "name": "shelf_prompt"},
                                          "argument": {"name": "shelf", "value": ""}}, None),
}


class Observer:
    """What each handler saw of Flask, and each call's start and teardown in the order they happened."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.events: list[tuple[str, int]] = []

    def look(self, handler: str) -> str:
        """Record what this handler sees, then mark its g with the call's number (returned as text)."""
        number = len(self.seen) + 1
        inside = has_app_context()
        self.seen.append({"handler": handler, "app_context": inside, "request_context": has_request_context(),
                          "app": current_app._get_current_object() if inside else None,
                          "g": sorted(g) if inside else None, "greenlet": gevent.getcurrent()})
        if inside:
            g.call = number
        self.events.append(("call", number))
        return str(number)

    def calls(self) -> list[tuple[str, int]]:
        """The calls' starts and teardowns (the MCP POSTs' own app contexts carry no call's mark)."""
        return [event for event in self.events if event[1] is not None]


def create_host() -> Flask:
    """A host app whose handlers report to app.extensions["observer"]."""
    app = Flask("host")
    observer = Observer()
    app.extensions["observer"] = observer

    @app.before_request
    def mark_the_request() -> None:
        """The host's own hook, which runs for the MCP POST too: a tool must not see its g."""
        g.from_before_request = True

    @app.teardown_appcontext
    def record_teardown(error: BaseException | None) -> None:
        observer.events.append(("teardown", g.get("call")))

    mcp = MCP(app)

    @mcp.tool
    def look() -> str:
        """Report what a tool sees."""
        return observer.look("tool")

    @mcp.tool(task="optional")
    def look_in_task() -> str:
        """Report what a tool run as a task sees."""
        return observer.look("task")

    @mcp.tool
    def look_and_ask(ctx: Context) -> str:
        """Report what a tool that asks the user sees, on each run."""
        number = observer.look("ask")
        answer = ctx.elicit("Go on?", {"type": "object", "properties": {"go": {"type": "boolean"}}})
        return f"{number}:{answer['action']}"

    @mcp.resource("host://look")
    def look_resource() -> str:
        """Report what a resource reader sees."""
        return observer.look("resource")

    @mcp.prompt
    def look_prompt() -> str:
        """Report what a prompt sees."""
        return observer.look("prompt")

    def complete_shelf(argument: str, value: str) -> list[str]:
        """Report what a completer sees."""
        return [observer.look("completer")]

    @prompt("shelf_prompt", arguments=[PromptArgument("shelf", required=True)], complete=complete_shelf)
    def shelf_prompt(shelf: str) -> str:
        """A prompt whose argument has a completer."""
        return shelf

    mcp.declare(spec_of(shelf_prompt))
    return app


@pytest.fixture
def app():
    host = create_host()
    yield host
    host.extensions["mcp"].shutdown()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def observer(app: Flask) -> Observer:
    return app.extensions["observer"]


class StreamableSession:
    """A Streamable HTTP session (2025-11-25) over Flask's test client."""

    def __init__(self, client: FlaskClient) -> None:
        self.client = client
        self.headers = {"Accept": ACCEPT, "Content-Type": "application/json", "MCP-Protocol-Version": SESSION_VERSION}
        opened = self.post("initialize", {"protocolVersion": SESSION_VERSION, "capabilities": {},
                                          "clientInfo": {"name": "test", "version": "1"}})
        assert "result" in opened, opened
        self.headers["Mcp-Session-Id"] = self.session_id
        self.client.post("/mcp", headers=self.headers,
                         data=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def post(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request; its JSON-RPC answer."""
        response = self.client.post("/mcp", headers=self.headers, data=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        self.session_id = response.headers.get("Mcp-Session-Id", "")
        return response.get_json()


def stateless_post(client: FlaskClient, method: str, params: dict[str, Any], name: str | None = None,
                   capabilities: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    """One 2026-07-28 request (meta: more _meta keys, as progressToken); its JSON-RPC answer."""
    headers = {"Accept": ACCEPT, "MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": {
        "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {}, **meta}}}
    response = client.post("/mcp", headers=headers, json=body)
    assert response.mimetype == "application/json", response.get_data(as_text=True)
    return response.get_json()


def check_calls_ran_in_the_app(app: Flask, observer: Observer, handlers: list[str]) -> None:
    """Each call saw this app's context, no request, an empty g; its teardown ran once, after it."""
    assert [seen["handler"] for seen in observer.seen] == handlers
    for seen in observer.seen:
        assert seen["app_context"] is True and seen["app"] is app
        assert seen["request_context"] is False
        assert seen["g"] == []  # neither the previous call's mark nor the MCP POST's before_request one
    expected = [event for number in range(1, len(handlers) + 1) for event in (("call", number), ("teardown", number))]
    assert observer.calls() == expected


@pytest.mark.parametrize("kind", CALLS)
def test_each_handler_runs_in_a_fresh_app_context_on_streamable_http(app, client, observer, kind):
    session = StreamableSession(client)
    method, params, _ = CALLS[kind]
    for _ in range(2):
        answer = session.post(method, params)
        assert "result" in answer, answer
    check_calls_ran_in_the_app(app, observer, [kind, kind])


@pytest.mark.parametrize("kind", CALLS)
def test_each_handler_runs_in_a_fresh_app_context_answered_in_place_on_2026_07_28(app, client, observer, kind):
    method, params, name = CALLS[kind]
    for _ in range(2):
        answer = stateless_post(client, method, params, name)
        assert "result" in answer, answer
    check_calls_ran_in_the_app(app, observer, [kind, kind])
    # In place: in the POST's own greenlet, where the POST's request context is pushed, yet the handler sees none.
    assert all(seen["greenlet"] is gevent.getcurrent() for seen in observer.seen)


@pytest.mark.parametrize("kind", CALLS)
def test_each_handler_runs_in_a_fresh_app_context_in_its_own_greenlet_on_2026_07_28(app, client, observer, kind):
    method, params, name = CALLS[kind]
    for token in ("first", "second"):
        answer = stateless_post(client, method, params, name, progressToken=token)
        assert "result" in answer, answer
    check_calls_ran_in_the_app(app, observer, [kind, kind])
    assert all(seen["greenlet"] is not gevent.getcurrent() for seen in observer.seen)


def test_a_task_runs_in_a_fresh_app_context(app, client, observer):
    results = []
    for _ in range(2):
        created = stateless_post(client, "tools/call", {"name": "look_in_task", "arguments": {}}, "look_in_task",
                                 TASKS)["result"]
        assert created["resultType"] == "task", created
        task = poll_until_ended(client, created["taskId"])
        assert task["status"] == "completed", task
        results.append(task["result"]["content"][0]["text"])
    assert results == ["1", "2"]
    check_calls_ran_in_the_app(app, observer, ["task", "task"])


def poll_until_ended(client: FlaskClient, task_id: str) -> dict[str, Any]:
    """tasks/get until the task has ended (bounded), yielding so its greenlet runs."""
    deadline = time.monotonic() + WAIT_S
    while True:
        task = stateless_post(client, "tasks/get", {"taskId": task_id}, task_id, TASKS)["result"]
        if task["status"] in ("completed", "failed", "cancelled") or time.monotonic() > deadline:
            return task
        gevent.sleep(0.02)


def test_an_input_rounds_retry_runs_in_a_fresh_app_context(app, client, observer):
    call = {"name": "look_and_ask", "arguments": {}}
    asked = stateless_post(client, "tools/call", call, "look_and_ask", {"elicitation": {}})["result"]
    assert asked["resultType"] == "input_required", asked
    [key] = asked["inputRequests"]
    retried = stateless_post(client, "tools/call", {**call, "requestState": asked["requestState"],
                                                    "inputResponses": {key: {"action": "decline"}}},
                             "look_and_ask", {"elicitation": {}})["result"]
    assert retried["content"][0]["text"] == "2:decline"  # the retry ran the tool again, from the top
    check_calls_ran_in_the_app(app, observer, ["ask", "ask"])


def test_a_server_without_an_app_runs_tools_outside_any_app_context():
    seen: list[bool] = []

    @tool("outside", input_schema={"type": "object"})
    def outside() -> str:
        """Report whether there is an app context."""
        seen.append(has_app_context())
        return "ran"

    registry = Registry()
    registry.declare(spec_of(outside))
    server = Server(Settings.from_environ({}), registry=registry)
    try:
        meta = {"io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                "io.modelcontextprotocol/clientCapabilities": {}}
        message = parse_body(dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                    "params": {"name": "outside", "arguments": {}, "_meta": meta}})).messages[0]
        response = loads(dumps(server.handle_request(ephemeral_session(message.meta, None), message,
                                                     lambda _: None)))
    finally:
        server.shutdown()
    assert response["result"]["content"][0]["text"] == "ran"
    assert seen == [False]

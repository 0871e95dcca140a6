"""A host whose own code reads the request body before MCP (a before_request logging request.get_json(), a
principal_loader calling request.get_data()): MCP reads the body werkzeug kept, within the same limits."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask, request

from flask_mcp_gevent import MCP
from tests.extension.test_host_app import McpSession

ALICE = {"principal": "alice", "tools": ["*"], "resources": [], "prompts": []}


@pytest.fixture
def host() -> Iterator[Callable[..., Flask]]:
    """Make host apps with MCP and an add tool; their MCP is shut down after the test."""
    apps: list[Flask] = []

    def make(read_in_loader: Callable[[Any], Any] | None = None, **settings: Any) -> Flask:
        app = Flask(__name__)
        mcp = MCP(app, settings=settings or None)

        @mcp.tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        if read_in_loader is not None:
            @mcp.principal_loader
            def load(incoming: Any) -> dict[str, Any]:
                read_in_loader(incoming)
                return ALICE

        apps.append(app)
        return app

    yield make
    for app in apps:
        app.extensions["mcp"].shutdown()


def test_a_before_request_that_reads_the_json_leaves_mcp_the_body(host):
    app = host()
    seen: list[Any] = []

    @app.before_request
    def audit() -> None:
        seen.append(request.get_json(silent=True))

    session = McpSession(app.test_client(), None)
    assert session.last_status == 200, session.opened
    assert session.call("add", {"a": 2, "b": 3})["structuredContent"] == {"result": 5}
    assert seen[-1]["params"] == {"name": "add", "arguments": {"a": 2, "b": 3}}


def test_a_principal_loader_that_reads_the_body_leaves_mcp_the_body(host):
    app = host(read_in_loader=lambda incoming: incoming.get_data())
    session = McpSession(app.test_client(), None)
    assert session.last_status == 200, session.opened
    assert session.call("add", {"a": 4, "b": 5})["structuredContent"] == {"result": 9}


def test_a_host_that_only_touched_the_form_leaves_mcp_the_unread_body(host):
    app = host(read_in_loader=lambda incoming: incoming.form)  # a JSON body is no form: werkzeug reads none of it
    session = McpSession(app.test_client(), None)
    assert session.last_status == 200, session.opened
    assert session.call("add", {"a": 1, "b": 1})["structuredContent"] == {"result": 2}


def test_a_body_the_host_read_is_still_held_to_the_size_limit(host):
    app = host(read_in_loader=lambda incoming: incoming.get_data(), max_body_bytes=1024)
    client = app.test_client()
    padding = "x" * 2048
    # Chunked, so no Content-Length tells the size first: the limit is applied to what the host read.
    response = client.post("/mcp", headers={"Content-Type": "application/json", "Accept": "application/json",
                                            "Transfer-Encoding": "chunked"},
                           input_stream=io.BytesIO(b'{"jsonrpc":"2.0","id":1,"method":"ping","pad":"' +
                                                   padding.encode() + b'"}'),
                           environ_overrides={"wsgi.input_terminated": True})
    assert response.status_code == 413
    assert "1024" in response.get_json()["error"]["message"]


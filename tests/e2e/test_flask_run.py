"""`flask run` (werkzeug's threaded development server, no gevent): what works there, and what is refused at once.

Requests served whole in their own thread work: Streamable HTTP POSTs (answered as JSON or as their own stream,
a question to the client on that stream included), the 2026-07-28 wire, DELETE. What waits for other requests'
messages is refused at once naming gunicorn's gevent worker (flask_mcp_gevent/without_gevent.py): the GET streams
with 405 (what the specification answers for a server without a GET stream, which the SDK takes in its stride),
legacy messages and subscriptions/listen with 501. The host app (tests/extension/host_app.py) and the template's
app are each served once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.raw_clients import BOTH
from tests.e2e.server_process import ROOT, free_port
from tests.e2e.stateless_client import stateless_headers, stateless_meta, stateless_request
from tests.support.waiting import wait_answering, wait_until

pytestmark = pytest.mark.e2e

FLASK = str(Path(sys.executable).with_name("flask"))
ALICE = {"Authorization": "Bearer tok-alice"}
# "Within a few seconds": every request here is answered in milliseconds, or refused at once.
QUICK_S = 5.0
DEADLINE_S = 30.0
GEVENT_WORKER = "gunicorn's gevent worker"
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
CALLS_AT_ONCE = 2


@contextmanager
def flask_run(app: str, health_path: str, **env: str) -> Iterator[tuple[str, int]]:
    """`flask --app APP run` on a free port, as a developer starts it; its base URL and PID, stopped by PID."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen([FLASK, "--app", app, "run", "--port", str(port)], cwd=ROOT, stdout=log,
                                   stderr=subprocess.STDOUT, env={**os.environ, "MCP_LOG_LEVEL": "WARNING", **env})
        try:
            wait_answering(f"http://127.0.0.1:{port}{health_path}")
            yield f"http://127.0.0.1:{port}", process.pid
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
            log.seek(0)
            output = log.read()
            assert b"Running on http://127.0.0.1" in output  # werkzeug's server, not another
            assert b"Traceback" not in output, output.decode(errors="replace")


@pytest.fixture(scope="module")
def host_app():
    """The host app (principal loader: send tok-alice) under flask run; its base URL."""
    with flask_run("tests.extension.host_app:create_app", "/") as (base_url, _):
        yield base_url


@pytest.fixture(scope="module")
def template():
    """The template's app under flask run (two calls at once per session); its base URL and the server's PID."""
    with flask_run("app:create_app", "/healthz", MCP_MAX_CONCURRENT_CALLS=str(CALLS_AT_ONCE)) as served:
        yield served


def initialize(http: httpx.Client, url: str, headers: dict[str, str] | None = None) -> dict[str, str]:
    """Open a Streamable HTTP session (initialize, then notifications/initialized); the headers that name it."""
    opened = http.post(url, headers={"Accept": BOTH, **(headers or {})}, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}})
    assert opened.status_code == 200 and opened.headers["content-type"] == "application/json", opened.text
    session = {**(headers or {}), "Accept": BOTH, "Mcp-Session-Id": opened.headers["Mcp-Session-Id"],
               "MCP-Protocol-Version": "2025-11-25"}
    initialized = http.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert initialized.status_code == 202
    return session


def tool_call(request_id: int, name: str, arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
    """A tools/call request."""
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, **params}}


def error_message(response: httpx.Response) -> str:
    """The message of a JSON-RPC error body."""
    return response.json()["error"]["message"]


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body."""
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]


# the host app
def test_a_streamable_http_session_is_answered_as_json(host_app):
    url = host_app + "/mcp"
    with httpx.Client(timeout=QUICK_S) as http:
        session = initialize(http, url, ALICE)
        called = http.post(url, headers=session, json=tool_call(2, "add", {"a": 2, "b": 3}))
        listed = http.post(url, headers=session, json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        pinged = http.post(url, headers=session, json={"jsonrpc": "2.0", "id": 4, "method": "ping"})
        ended = http.delete(url, headers=session)
    assert called.headers["content-type"] == "application/json"
    assert called.json()["result"]["structuredContent"] == {"result": 5}
    assert "add" in {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert pinged.json() == {"jsonrpc": "2.0", "id": 4, "result": {}}
    assert ended.status_code == 204


def test_a_stateless_tools_call_is_answered_on_the_host_app(host_app):
    message = stateless_request("tools/call", {"name": "add", "arguments": {"a": 20, "b": 22}})
    answer = httpx.post(host_app + "/mcp", json=message, headers={**ALICE, **stateless_headers(message)},
                        timeout=QUICK_S)
    assert answer.status_code == 200 and answer.json()["result"]["structuredContent"] == {"result": 42}


def test_a_host_hook_that_reads_the_json_first_leaves_mcp_the_body_under_flask_run():
    # werkzeug's server hands the socket itself as wsgi.input: a second read of the spent body would wait forever.
    with flask_run("tests.extension.host_app:create_auditing_app", "/") as (base_url, _), \
            httpx.Client(timeout=QUICK_S) as http:
        session = initialize(http, base_url + "/mcp", ALICE)
        called = http.post(base_url + "/mcp", headers=session, json=tool_call(2, "add", {"a": 6, "b": 7}))
    assert called.json()["result"]["structuredContent"] == {"result": 13}


def test_the_get_streams_are_refused_at_once_with_405_naming_the_gevent_worker(host_app):
    with httpx.Client(timeout=QUICK_S) as http:
        session = initialize(http, host_app + "/mcp", ALICE)
        started = time.monotonic()
        standalone = http.get(host_app + "/mcp", headers={**session, "Accept": "text/event-stream"})
        legacy = http.get(host_app + "/mcp", headers={**ALICE, "Accept": "text/event-stream"})
        sse_alias = http.get(host_app + "/mcp/sse", headers={**ALICE, "Accept": "text/event-stream"})
        took = time.monotonic() - started
    for refused in (standalone, legacy, sse_alias):
        assert refused.status_code == 405, refused.text
        assert refused.headers["content-type"] == "application/json"
        assert GEVENT_WORKER in error_message(refused) and "event stream" in error_message(refused)
    assert standalone.headers["Allow"] == "POST, DELETE" and sse_alias.headers["Allow"] == ""
    assert took < QUICK_S


def test_legacy_messages_and_listen_are_refused_at_once_with_501(host_app):
    with httpx.Client(timeout=QUICK_S) as http:
        legacy = http.post(host_app + "/mcp/messages?session_id=" + "a" * 32, headers=ALICE,
                           json={"jsonrpc": "2.0", "id": 7, "method": "ping"})
        listen = stateless_request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        listened = http.post(host_app + "/mcp", json=listen, headers={**ALICE, **stateless_headers(listen)})
    assert legacy.status_code == 501 and legacy.json()["id"] == 7
    assert GEVENT_WORKER in error_message(legacy) and "legacy SSE" in error_message(legacy)
    assert listened.status_code == 501 and listened.json()["id"] == listen["id"]
    assert GEVENT_WORKER in error_message(listened)


# the template's app
def test_a_stateless_tools_call_is_answered_on_the_template(template):
    base_url, _ = template
    message = stateless_request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    answer = httpx.post(base_url + "/mcp", json=message, headers=stateless_headers(message), timeout=QUICK_S)
    assert answer.status_code == 200 and answer.json()["result"]["structuredContent"] == {"result": "hi"}


def test_a_request_with_progress_gets_its_own_stream(template):
    base_url, _ = template
    with httpx.Client(timeout=QUICK_S) as http:
        session = initialize(http, base_url + "/mcp")
        streamed = http.post(base_url + "/mcp", headers=session, json=tool_call(
            2, "count_down", {"steps": 3, "delay_ms": 10}, _meta={"progressToken": "p"}))
    assert streamed.headers["content-type"].startswith("text/event-stream")
    messages = sse_messages(streamed.text)
    assert [m["params"]["progress"] for m in messages if m.get("method") == "notifications/progress"] == [1, 2, 3]
    assert messages[-1]["result"]["structuredContent"] == {"result": "Counted down from 3."}


def test_a_request_whose_client_left_its_stream_still_finishes_and_frees_its_call_slot(template):
    # With gevent it runs on after its stream; here its thread waits for it before the request is over.
    base_url, _ = template
    url = base_url + "/mcp"
    with httpx.Client(timeout=QUICK_S) as http:
        session = initialize(http, url)
    for request_id in range(2, 2 + CALLS_AT_ONCE):  # every slot the session has
        with httpx.Client(timeout=QUICK_S) as http, http.stream("POST", url, headers=session, json=tool_call(
                request_id, "count_down", {"steps": 10, "delay_ms": 50}, _meta={"progressToken": "p"})) as stream:
            assert next(line for line in stream.iter_lines() if "notifications/progress" in line)
        # Leaving the block closes the connection with the call still counting down.

    def echo_answers() -> bool:
        answered = httpx.post(url, headers=session, json=tool_call(99, "echo", {"text": "hi"}), timeout=QUICK_S)
        return "result" in answered.json()

    wait_until(echo_answers, what="a call slot to be free again")


def test_a_question_on_the_requests_own_stream_is_answered_from_another_connection(template):
    base_url, _ = template
    url = base_url + "/mcp"
    with httpx.Client(timeout=QUICK_S) as http:
        session = initialize(http, url)
        asked = tool_call(2, "ask_choice", {"question": "Tea or coffee?", "options": ["tea", "coffee"]})
        with http.stream("POST", url, headers=session, json=asked) as stream:
            messages = []
            for line in stream.iter_lines():
                if line.startswith("data:") and line[5:].strip():  # not the priming event, which has no data
                    messages.append(json.loads(line[5:]))
                    if messages[-1].get("method") == "elicitation/create":
                        # On another connection, so another of the server's threads.
                        answer = {"jsonrpc": "2.0", "id": messages[-1]["id"],
                                  "result": {"action": "accept", "content": {"choice": "tea"}}}
                        assert httpx.post(url, headers=session, json=answer, timeout=QUICK_S).status_code == 202
    assert messages[0]["method"] == "elicitation/create"
    assert messages[-1]["result"]["structuredContent"] == {"result": "tea"}


def test_a_question_from_a_request_answered_as_json_fails_at_once(template):
    base_url, _ = template
    with httpx.Client(timeout=QUICK_S) as http:
        session = {**initialize(http, base_url + "/mcp"), "Accept": "application/json"}
        answered = http.post(base_url + "/mcp", headers=session, json=tool_call(
            2, "ask_choice", {"question": "Tea or coffee?", "options": ["tea", "coffee"]}))
    result = answered.json()["result"]
    assert result["isError"] is True
    assert "Cannot send elicitation/create" in result["content"][0]["text"]
    assert GEVENT_WORKER in result["content"][0]["text"]


def test_a_tool_that_may_run_as_a_task_runs_at_once(template):
    base_url, _ = template
    message = stateless_request("tools/call", {"name": "count_down", "arguments": {"steps": 2}},
                                meta=stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": TASKS}))
    answer = httpx.post(base_url + "/mcp", json=message, headers=stateless_headers(message), timeout=QUICK_S)
    result = answer.json()["result"]
    assert result["resultType"] == "complete" and result["structuredContent"] == {"result": "Counted down from 2."}


def test_requests_on_new_connections_leave_no_file_descriptors_behind(template):
    # werkzeug serves each connection on a new thread; each thread's gevent hub holds two descriptors until destroyed.
    base_url, pid = template

    def descriptors() -> int:
        return len(os.listdir(f"/proc/{pid}/fd"))

    def call_on_a_new_connection() -> None:
        message = stateless_request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        with httpx.Client(timeout=QUICK_S) as http:
            assert http.post(base_url + "/mcp", json=message, headers=stateless_headers(message)).status_code == 200
            initialize(http, base_url + "/mcp")

    call_on_a_new_connection()
    before = descriptors()
    for _ in range(50):
        call_on_a_new_connection()
    # A few connection threads may still be winding down; 50 leaked hubs would be 100 descriptors.
    assert descriptors() - before < 10


def test_the_sdk_connects_in_its_handshake_mode_and_takes_the_405_in_its_stride(template):
    base_url, _ = template
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async def exercise() -> None:
        with anyio.fail_after(DEADLINE_S):
            async with streamable_http_client(base_url + "/mcp") as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=DEADLINE_S) as session:
                await session.initialize()
                # Its GET stream, opened after initialize, was refused with 405; the session carries on.
                added = await session.call_tool("add", {"a": 2, "b": 40})
                assert added.structured_content == {"result": 42}
                counted = await session.call_tool("count_down", {"steps": 3}, progress_callback=on_progress)
                assert counted.structured_content == {"result": "Counted down from 3."}
                assert {tool.name for tool in (await session.list_tools()).tools} >= {"add", "echo"}

    anyio.run(exercise)
    assert progress == [1, 2, 3]


def test_the_sdk_client_in_its_default_mode_works(template):
    base_url, _ = template

    async def exercise() -> None:
        with anyio.fail_after(DEADLINE_S):
            async with Client(streamable_http_client(base_url + "/mcp"), read_timeout_seconds=DEADLINE_S) as client:
                echoed = await client.call_tool("echo", {"text": "héllo"})
                assert [block.text for block in echoed.content if isinstance(block, types.TextContent)] == ["héllo"]

    anyio.run(exercise)

"""`flask --app APP mcp ...` run as a user runs it: tools, call, stdio (with the official SDK's stdio client), serve."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.server_process import ROOT, free_port
from tests.support.waiting import wait_answering

pytestmark = pytest.mark.e2e

FLASK = str(Path(sys.executable).with_name("flask"))
DEADLINE_S = 60.0


def flask_mcp(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    """Run `flask --app app mcp ARGS` in the checkout, as the README says."""
    return subprocess.run([FLASK, "--app", "app", "mcp", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "MCP_LOG_LEVEL": "WARNING"})


def test_tools_lists_every_tool_with_its_summary():
    listed = flask_mcp("tools")
    assert listed.returncode == 0, listed.stderr
    lines = dict(line.split(None, 1) for line in listed.stdout.splitlines())
    assert lines["add"] == "Add two integers and return their sum."
    assert {"echo", "get_time", "count_down"} <= set(lines)


def test_tools_json_is_what_tools_list_answers():
    listed = flask_mcp("tools", "--json")
    tools = {tool["name"]: tool for tool in json.loads(listed.stdout)["tools"]}
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]


def test_call_prints_the_result_as_json():
    called = flask_mcp("call", "add", '{"a": 2, "b": 40}')
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["structuredContent"] == {"result": 42}


def test_a_failing_call_prints_the_error_result_and_exits_1():
    called = flask_mcp("call", "add", '{"a": "two"}')
    assert called.returncode == 1
    result = json.loads(called.stdout)
    assert result["isError"] is True
    assert "'two' is not of type 'integer'" in result["content"][0]["text"]


@pytest.mark.parametrize("arguments", ["[1, 2]", "{not json"])
def test_arguments_that_are_not_a_json_object_are_refused_with_usage(arguments):
    called = flask_mcp("call", "add", arguments)
    assert called.returncode == 2
    assert "ARGUMENTS" in called.stderr and "Traceback" not in called.stderr


def test_an_unknown_tool_is_a_clear_error():
    called = flask_mcp("call", "no_such_tool", "{}")
    assert called.returncode != 0 and "Traceback" not in called.stderr
    assert "no_such_tool" in called.stderr + called.stdout


async def add_through(transport) -> int:
    """Initialize, call add(2, 40) and return the structured result."""
    async with transport as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        added = await session.call_tool("add", {"a": 2, "b": 40})
        return added.structured_content["result"]


def test_stdio_serves_the_apps_tools_to_the_sdks_stdio_client():
    params = StdioServerParameters(command=FLASK, args=["--app", "app", "mcp", "stdio"], cwd=str(ROOT))

    async def bounded() -> int:
        with anyio.fail_after(DEADLINE_S), tempfile.TemporaryFile("w+") as errlog:
            return await add_through(stdio_client(params, errlog=errlog))

    assert anyio.run(bounded) == 42


def test_serve_runs_the_app_under_gunicorn_for_the_sdks_http_client():
    port = free_port()
    process = subprocess.Popen([FLASK, "--app", "app", "mcp", "serve", "--bind", f"127.0.0.1:{port}"], cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_answering(f"http://127.0.0.1:{port}/healthz")

        async def bounded() -> int:
            with anyio.fail_after(DEADLINE_S):
                return await add_through(streamable_http_client(f"http://127.0.0.1:{port}/mcp"))

        assert anyio.run(bounded) == 42
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=30)
    # The exec'd process is gunicorn itself, with the gevent worker.
    assert "Using worker: flask_mcp_gevent.serving.gunicorn_worker.McpWorker" in errors



# a host app with a principal loader: the CLI is the local user, who may use everything
HOST_APP = "tests.extension.host_app:create_app()"


def flask_host_mcp(*args: str) -> subprocess.CompletedProcess:
    """Run `flask --app <the extension tests' host app> mcp ARGS`."""
    return subprocess.run([FLASK, "--app", HOST_APP, "mcp", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "MCP_LOG_LEVEL": "WARNING"})


def test_tools_with_a_loader_lists_every_tool_for_the_local_user():
    listed = flask_host_mcp("tools")
    assert listed.returncode == 0, listed.stderr
    names = {line.split(None, 1)[0] for line in listed.stdout.splitlines()}
    assert names == {"add", "get_order", "create_order", "delete_order", "file_info"}


def test_call_with_a_loader_runs_as_the_local_user():
    called = flask_host_mcp("call", "add", '{"a": 2, "b": 40}')
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout)["structuredContent"] == {"result": 42}


def test_stdio_starts_without_warnings_and_writes_only_json_rpc_to_stdout():
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    ran = subprocess.run([FLASK, "--app", HOST_APP, "mcp", "stdio"], cwd=ROOT, input=json.dumps(request) + "\n",
                         capture_output=True, text=True, timeout=60)
    assert "Warning" not in ran.stderr, ran.stderr
    [line] = ran.stdout.splitlines()
    assert json.loads(line)["result"]["serverInfo"]["name"] == "flask-mcp-gevent"

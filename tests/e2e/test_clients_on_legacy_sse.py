"""Real MCP clients over legacy HTTP+SSE on `GET /mcp`, at their default modes and their others.

Each client connects with its SSE transport to http://127.0.0.1:PORT/mcp, lists tools and calls echo. A POST that
names a legacy session (`?session_id=`) belongs to that session whatever its body says: the server/discover probe of
an auto-mode client gets its error on the session's stream, so the client falls back to initialize; a client pinned
to 2026-07-28 gets a clear error. The server never answers such a POST with a 4xx.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, ClientSession
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError

from tests.e2e.raw_clients import LegacyStream, client
from tests.e2e.server_process import ServerProcess
from tests.e2e.stateless_client import stateless_headers, stateless_request
from tests.support.waiting import wait_until

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE.parent / "conformance" / "node_modules"
NODE = NODE_MODULES / ".bin" / "node"
TS_DRIVER = HERE / "ts_client" / "legacy_sse_client.mjs"
INSPECTOR = NODE_MODULES / ".bin" / "mcp-inspector"
MCP_REMOTE = NODE_MODULES / ".bin" / "mcp-remote"
# What a fallback settles on: the newest handshake version, the one the server prefers.
HANDSHAKE_VERSION = "2025-11-25"
STATELESS_ERA = "2026-07-28"
RUN_TIMEOUT_S = 60
CALL_TIMEOUT_S = 20.0
EXPECTED_TOOLS = {"add", "echo", "get_time"}
# A POST to /mcp (a legacy message names its session in the query) that the server refused before dispatch.
REFUSED_POST = re.compile(r"http method=POST path=/mcp\b.*status=[45]\d\d")
# GET /mcp opening a legacy stream, and a request dispatched on a session (accepted POSTs are not logged).
LEGACY_STREAM = re.compile(r"mcp.sse opened legacy session [0-9a-f]{8}")
ON_A_SESSION = re.compile(r"rpc method=\S+ .*session=[0-9a-f]{8} status=")
# The auto-mode probe, answered with a JSON-RPC error on a legacy session's stream.
PROBE_ANSWERED = re.compile(r"rpc method=server/discover .*session=[0-9a-f]{8} status=error")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not all((NODE_MODULES / package).exists() for package in (
        "@modelcontextprotocol/client", "@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector",
        "mcp-remote")), reason="run scripts/test.sh (npm install in tests/conformance) first"),
]


@pytest.fixture(scope="module")
def server():
    """Our gunicorn, with its default tools (echo among them)."""
    with ServerProcess() as process:
        yield process


@pytest.fixture
def server_log(server):
    """A function returning what the server logged since this test began."""
    start = len(server.read_log())
    return lambda: server.read_log()[start:]


def assert_served_on_legacy_sse(log) -> None:
    """The client opened a legacy stream and its POSTs reached its session, none of them refused."""
    wait_until(lambda: ON_A_SESSION.search(log()), what="a request's log line naming its session")
    assert LEGACY_STREAM.search(log())
    assert not REFUSED_POST.findall(log())


def assert_probe_fell_back(log) -> None:
    """The client's server/discover went to its legacy session and was answered there with an error."""
    wait_until(lambda: PROBE_ANSWERED.search(log()), what="the server/discover probe's log line")


def node_env(home: str) -> dict[str, str]:
    """A Node client's environment: its packages, and a HOME of its own for whatever state it writes."""
    return {"PATH": os.environ.get("PATH", ""), "HOME": home, "MCP_NODE_MODULES": str(NODE_MODULES),
            "MCP_REMOTE_CONFIG_DIR": str(Path(home) / ".mcp-auth")}


def run_node(*args: str) -> tuple[int, str, str]:
    """Run a Node client to the end (bounded); its exit code, stdout and stderr."""
    with tempfile.TemporaryDirectory(prefix="mcp-client-home-") as home:
        done = subprocess.run([str(NODE), *args], capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                              env=node_env(home))
    return done.returncode, done.stdout, done.stderr


def last_json_line(stdout: str, stderr: str) -> dict[str, Any]:
    """The last line a client printed, as JSON."""
    lines = stdout.strip().splitlines()
    assert lines, f"no output: {stderr[-2000:]}"
    return json.loads(lines[-1])


# the rule, by raw HTTP: the same answer on /mcp as on the SDKs' /messages
@pytest.mark.parametrize("stream_path", ["/mcp", "/sse"])
@pytest.mark.parametrize("method", ["server/discover", "tools/list"])
def test_a_2026_07_28_request_naming_a_legacy_session_is_answered_on_its_stream(server, server_log, stream_path,
                                                                                  method):
    message = stateless_request(method, request_id="probe")
    with client(CALL_TIMEOUT_S) as http, LegacyStream(http, server.base_url, stream_path) as stream:
        posted = stream.post(message, headers=stateless_headers(message))
        assert posted.status_code == 202, posted.text
        answer = stream.wait_for("probe")
    # The session has not been initialized: what a 2025 session answers any request but initialize and ping.
    assert answer["error"]["code"] == -32600
    assert "initialize" in answer["error"]["message"]
    assert not REFUSED_POST.findall(server_log())


# the Python SDK 2.3
async def list_and_echo(session: Any) -> None:
    """tools/list names the default tools; echo answers with its text."""
    with anyio.fail_after(CALL_TIMEOUT_S):
        assert EXPECTED_TOOLS <= {tool.name for tool in (await session.list_tools()).tools}
        echoed = await session.call_tool("echo", {"text": "over legacy SSE"})
    assert [block.text for block in echoed.content] == ["over legacy SSE"]


@pytest.mark.anyio
async def test_python_client_session_over_sse_client_lists_and_calls(server, server_log):
    async with sse_client(server.url) as (read, write), ClientSession(read, write) as session:
        with anyio.fail_after(CALL_TIMEOUT_S):
            initialized = await session.initialize()
        assert initialized.protocol_version == HANDSHAKE_VERSION
        await list_and_echo(session)
    assert_served_on_legacy_sse(server_log)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_python_client_over_sse_settles_on_the_handshake_and_lists_and_calls(server, server_log, mode):
    with anyio.fail_after(CALL_TIMEOUT_S):
        async with Client(sse_client(server.url), mode=mode, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            assert client.protocol_version == HANDSHAKE_VERSION
            await list_and_echo(client)
    assert_served_on_legacy_sse(server_log)
    if mode == "auto":
        assert_probe_fell_back(server_log)


@pytest.mark.anyio
async def test_python_client_pinned_to_2026_07_28_over_sse_gets_a_clear_error_at_once(server, server_log):
    # The pin adopts 2026-07-28 without asking; its first request reaches a session never initialized.
    async with Client(sse_client(server.url), mode=STATELESS_ERA, read_timeout_seconds=CALL_TIMEOUT_S) as client:
        with anyio.fail_after(CALL_TIMEOUT_S / 2), pytest.raises(MCPError) as refused:
            await client.list_tools()
    assert refused.value.error.code == -32600
    assert "initialize" in refused.value.error.message
    assert_served_on_legacy_sse(server_log)


# the TypeScript clients: @modelcontextprotocol/client 2.4 and @modelcontextprotocol/sdk 1.32
@pytest.mark.parametrize("mode", ["default", "legacy", "auto"])
def test_typescript_client_2_over_sse_lists_and_calls(server, server_log, mode):
    result = last_json_line(*run_node(str(TS_DRIVER), server.url, "client", mode)[1:])
    assert "error" not in result, result["error"]
    assert result["protocolVersion"] == HANDSHAKE_VERSION
    assert EXPECTED_TOOLS <= set(result["tools"])
    assert result["echo"] == ["over legacy SSE"]
    assert_served_on_legacy_sse(server_log)
    if mode == "auto":
        assert_probe_fell_back(server_log)


def test_typescript_client_2_pinned_to_2026_07_28_over_sse_gets_a_clear_error(server, server_log):
    code, stdout, stderr = run_node(str(TS_DRIVER), server.url, "client", STATELESS_ERA)
    assert code == 1
    assert "did not offer pinned protocol version 2026-07-28" in last_json_line(stdout, stderr)["error"]
    assert_served_on_legacy_sse(server_log)
    assert_probe_fell_back(server_log)


def test_typescript_sdk_1_over_sse_lists_and_calls(server, server_log):
    result = last_json_line(*run_node(str(TS_DRIVER), server.url, "sdk", "default")[1:])
    assert "error" not in result, result["error"]
    assert EXPECTED_TOOLS <= set(result["tools"])
    assert result["echo"] == ["over legacy SSE"]
    assert_served_on_legacy_sse(server_log)


# the Inspector CLI 2.12 (ad hoc runs default to --protocol-era legacy)
def inspector(url: str, era: str | None, *method: str) -> tuple[int, dict[str, Any]]:
    """Run the Inspector CLI over SSE; its exit code and its one JSON object (result or error)."""
    era_args = ("--protocol-era", era) if era else ()
    code, stdout, stderr = run_node(str(INSPECTOR), "--cli", "--transport", "sse", "--server-url", url,
                                    "--format", "json", *era_args, *method)
    text = (stdout.strip() or stderr.strip()).splitlines()
    assert text, f"no output (exit {code})"
    return code, json.loads(text[-1])


@pytest.mark.parametrize("era", [None, "legacy", "auto"])
def test_inspector_cli_over_sse_lists_and_calls(server, server_log, era):
    code, listed = inspector(server.url, era, "--method", "tools/list")
    assert code == 0, listed
    assert EXPECTED_TOOLS <= {tool["name"] for tool in listed["result"]["tools"]}
    code, called = inspector(server.url, era, "--method", "tools/call", "--tool-name", "echo",
                             "--tool-arg", "text=over legacy SSE")
    assert code == 0, called
    assert called["result"]["content"] == [{"type": "text", "text": "over legacy SSE"}]
    assert_served_on_legacy_sse(server_log)
    if era == "auto":
        assert_probe_fell_back(server_log)


def test_inspector_cli_pinned_to_2026_07_28_over_sse_gets_a_clear_error(server, server_log):
    # "modern" is the Inspector's own word for the 2026-07-28 era (--protocol-era).
    _, answer = inspector(server.url, "modern", "--method", "tools/list")
    assert "did not offer pinned protocol version 2026-07-28" in answer["error"]["message"]
    assert_served_on_legacy_sse(server_log)
    assert_probe_fell_back(server_log)


# mcp-remote 0.15, as Claude Desktop runs it: a stdio server to its parent, legacy SSE to ours
class StdioPeer:
    """JSON-RPC lines to a child's stdin, and its stdout lines read with a deadline."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process
        self.selector = selectors.DefaultSelector()
        self.selector.register(process.stdout, selectors.EVENT_READ)

    def send(self, message: dict[str, Any]) -> None:
        """Write one message as a line."""
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def answer(self, request_id: int, timeout: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        """Read lines until the response to request_id; fail after timeout."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            if not self.selector.select(left):
                continue
            line = self.process.stdout.readline()
            assert line, f"the client exited: {self.process.stderr.read()[-2000:]}"
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return message
        raise AssertionError(f"no answer to request {request_id} within {timeout:g} s")

    def call(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return its result."""
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})})
        answer = self.answer(request_id)
        assert "result" in answer, answer
        return answer["result"]


@contextlib.contextmanager
def mcp_remote(url: str) -> Iterator[StdioPeer]:
    """mcp-remote proxying stdio to url over legacy SSE only, with a HOME of its own; stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="mcp-remote-home-") as home:
        process = subprocess.Popen([str(NODE), str(MCP_REMOTE), url, "--transport", "sse-only"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=node_env(home))
        try:
            yield StdioPeer(process)
        finally:
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def test_mcp_remote_sse_only_proxies_initialize_list_and_call(server, server_log):
    with mcp_remote(server.url) as peer:
        initialized = peer.call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                  "clientInfo": {"name": "claude-ai", "version": "0.1.0"}})
        assert initialized["serverInfo"]["name"]
        peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert EXPECTED_TOOLS <= {tool["name"] for tool in peer.call(2, "tools/list")["tools"]}
        echoed = peer.call(3, "tools/call", {"name": "echo", "arguments": {"text": "over legacy SSE"}})
    assert echoed["content"] == [{"type": "text", "text": "over legacy SSE"}]
    assert_served_on_legacy_sse(server_log)

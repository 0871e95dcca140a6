"""The official SDK 2.3 `Client` on the 2026-07-28 wire, pinned and in auto mode, over HTTP and stdio.

Each scenario is a coroutine taking a connected `mcp.Client`, so the same client code can be pointed at
any server; the tests point it at ours (gunicorn, and `python app.py --stdio`). Every test first asserts
the negotiated era, so an auto-mode client that fell back to 2025-11-25 cannot pass.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.subscriptions import ToolsListChanged

from tests.e2e.server_process import ROOT, ServerProcess
from tests.support.waiting import wait_until_async

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

STATELESS_ERA = "2026-07-28"
MODES = (STATELESS_ERA, "auto")
PLUGINS = "tests.e2e.plugins.feature_tools,tests.e2e.plugins.two_question_tools"
WAIT_S = 15.0
REQUEST_TIMEOUT_S = 30.0
# A request log line that did not succeed: a JSON-RPC error or an HTTP 4xx/5xx.
FAILED = re.compile(r"status=(error|[45]\d\d)")
# A POST to /mcp refused before dispatch (such a line names no method), or a version the server refused.
REFUSED = re.compile(r"http method=POST path=/mcp\b.*status=[45]\d\d|-32022")


# scenarios: client code only, no knowledge of which server answers
async def lists_and_calls_tools(client: Client) -> None:
    """tools/list names add, echo and get_time; calling each gives its result."""
    names = {tool.name for tool in (await client.list_tools()).tools}
    assert {"add", "echo", "get_time"} <= names
    added = await client.call_tool("add", {"a": 2, "b": 3})
    assert not added.is_error
    assert [block.text for block in added.content] == ["5"]
    echoed = await client.call_tool("echo", {"text": "stateless"})
    assert [block.text for block in echoed.content] == ["stateless"]
    now = await client.call_tool("get_time", {})
    assert not now.is_error
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d", now.content[0].text)


async def reports_progress(client: Client) -> None:
    """count_down's progress notifications reach the call's progress callback, in order."""
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        """Keep each progress report."""
        seen.append((progress, total))

    result = await client.call_tool("count_down", {"steps": 3}, progress_callback=on_progress)
    assert [block.text for block in result.content] == ["Counted down from 3."]
    assert seen == [(1, 3), (2, 3), (3, 3)]


async def lists_and_reads_resources(client: Client) -> None:
    """resources/list names config://server, and reading it gives JSON settings."""
    uris = {str(resource.uri) for resource in (await client.list_resources()).resources}
    assert "config://server" in uris
    read = await client.read_resource("config://server")
    [contents] = read.contents
    assert contents.mime_type == "application/json"
    assert isinstance(json.loads(contents.text), dict)


async def gets_a_prompt(client: Client) -> None:
    """prompts/list names code_review, and getting it puts the code and language in the message."""
    names = {prompt.name for prompt in (await client.list_prompts()).prompts}
    assert "code_review" in names
    prompt = await client.get_prompt("code_review", {"code": "x = 1", "language": "python"})
    [message] = prompt.messages
    assert message.role == "user"
    assert "```python\nx = 1\n```" in message.content.text


async def completes_an_argument(client: Client) -> None:
    """completion/complete on code_review's language suggests python for "py"."""
    result = await client.complete(types.PromptReference(type="ref/prompt", name="code_review"),
                                   {"name": "language", "value": "py"})
    assert result.completion.values == ["python"]


async def hears_tools_list_changed(client: Client) -> None:
    """A listen stream asking for tool changes gets tools/list_changed when a tool is added at run time."""
    name = f"rt-{uuid.uuid4().hex[:8]}"
    async with client.listen(tools_list_changed=True) as subscription:
        assert subscription.honored.tools_list_changed is True
        try:
            await client.call_tool("change_registry", {"kind": "tool", "action": "add", "name": name})
            with anyio.fail_after(WAIT_S):
                event = await subscription.__anext__()
            assert isinstance(event, ToolsListChanged)
            assert name in {tool.name for tool in (await client.list_tools(cache_mode="bypass")).tools}
        finally:
            await client.call_tool("change_registry", {"kind": "tool", "action": "remove", "name": name})


ANSWERS = {"name": "Ada", "colour": "teal"}


class Answers:
    """An elicitation callback answering the name and colour questions, keeping every message asked."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        """Answer name with Ada and colour with teal."""
        self.messages.append(params.message)
        [field] = params.requested_schema["properties"]
        return types.ElicitResult(action="accept", content={field: ANSWERS[field]})


async def answers_two_elicitations(client: Client, answers: Answers) -> None:
    """ask_twice asks twice (two input_required rounds); the callback's answers come back in the result."""
    result = await client.call_tool("ask_twice", {})
    assert not result.is_error
    assert [block.text for block in result.content] == ["Hello Ada, who likes teal."]
    assert answers.messages == ["What is your name?", "Ada, what is your favourite colour?"]


# how the tests reach our server
@pytest.fixture(scope="module")
def http_server():
    """Our gunicorn with the feature and stateless plugin tools."""
    with ServerProcess(env={"MCP_PLUGINS": PLUGINS}) as process:
        yield process


def stdio_params() -> StdioServerParameters:
    """Our server over stdio, with the same plugins."""
    env = {**os.environ, "MCP_PLUGINS": PLUGINS, "MCP_LOG_LEVEL": "INFO"}
    return StdioServerParameters(command=sys.executable, args=["app.py", "--stdio"], cwd=str(ROOT), env=env)


@contextlib.asynccontextmanager
async def connect(target: Any, mode: str, **callbacks: Any) -> AsyncIterator[Client]:
    """A connected SDK Client in mode; target is a URL or a stdio transport."""
    async with Client(target, mode=mode, read_timeout_seconds=REQUEST_TIMEOUT_S, **callbacks) as client:
        yield client


@contextlib.asynccontextmanager
async def our_client(transport: str, mode: str, server: ServerProcess, **callbacks: Any
                     ) -> AsyncIterator[tuple[Client, Callable[[], str]]]:
    """A Client to our server over transport, and a function returning the server's log so far."""
    if transport == "http":
        async with connect(server.url, mode, **callbacks) as client:
            yield client, server.read_log
        return
    with tempfile.NamedTemporaryFile("w+", prefix="mcp-stdio-", suffix=".log") as errlog:
        async with connect(stdio_client(stdio_params(), errlog=errlog), mode, **callbacks) as client:
            yield client, lambda: Path(errlog.name).read_text(errors="replace")


def discover_lines(log: str) -> list[str]:
    """The server's log lines about server/discover."""
    return [line for line in log.splitlines() if "server/discover" in line]


async def assert_settled_stateless(client: Client, mode: str, log: Callable[[], str]) -> None:
    """The client speaks 2026-07-28; in auto mode its discover probe was answered, never refused."""
    assert client.protocol_version == STATELESS_ERA
    if mode != "auto":
        return
    # The request's log line may be written just after its response: wait for it, bounded.
    discovers = await wait_until_async(lambda: discover_lines(log()), "the server/discover log line")
    assert discovers, "auto mode sent no server/discover the server logged"
    assert not [line for line in discovers if FAILED.search(line)]
    assert not [line for line in log().splitlines() if REFUSED.search(line)]


Scenario = Callable[[Client], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {
    "tools": lists_and_calls_tools,
    "progress": reports_progress,
    "resources": lists_and_reads_resources,
    "prompts": gets_a_prompt,
    "completion": completes_an_argument,
    "listen": hears_tools_list_changed,
}


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_sdk_client_on_the_stateless_wire(http_server, transport, mode, scenario):
    async with our_client(transport, mode, http_server) as (client, log):
        await assert_settled_stateless(client, mode, log)
        await SCENARIOS[scenario](client)


@pytest.mark.parametrize("transport", ["http", "stdio"])
@pytest.mark.parametrize("mode", MODES)
async def test_sdk_client_answers_a_two_round_elicitation(http_server, transport, mode):
    answers = Answers()
    async with our_client(transport, mode, http_server, elicitation_callback=answers) as (client, log):
        await assert_settled_stateless(client, mode, log)
        await answers_two_elicitations(client, answers)


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_auto_mode_every_discover_is_answered(http_server, transport):
    async with our_client(transport, "auto", http_server) as (client, log):
        await client.list_tools()
        await assert_settled_stateless(client, "auto", log)
        assert client.server_info is not None
        assert client.server_capabilities.tools is not None

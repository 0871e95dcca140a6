"""The official `mcp` SDK clients against the real server: sse_client, streamable_http_client, stdio_client."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from tests.e2e.server_process import ROOT

pytestmark = pytest.mark.e2e

# The whole exchange, server start included for stdio, must finish within this.
DEADLINE_S = 60.0
# Each request fails instead of hanging if the server never answers.
REQUEST_TIMEOUT_S = 30.0


def text_blocks(result: types.CallToolResult) -> list[str]:
    """The text of a result's content, checking every block is a text block."""
    assert all(isinstance(block, types.TextContent) for block in result.content), result.content
    return [block.text for block in result.content]


async def exercise(transport: AbstractAsyncContextManager) -> None:
    """Initialize, list tools, call add, echo and get_time, and check every answer."""
    async with transport as (read, write), ClientSession(read, write, REQUEST_TIMEOUT_S) as session:
        init = await session.initialize()
        assert init.protocol_version == LATEST_HANDSHAKE_VERSION
        assert init.server_info.name
        assert init.capabilities.tools is not None
        assert init.instructions

        listed = await session.list_tools()
        tools = {tool.name: tool for tool in listed.tools}
        assert {"add", "echo", "get_time"} <= set(tools)
        assert tools["add"].input_schema["required"] == ["a", "b"]
        assert tools["add"].output_schema["properties"]["result"]["type"] == "integer"

        added = await session.call_tool("add", {"a": 2, "b": 40})
        assert added.is_error is False
        assert text_blocks(added) == ["42"]
        assert added.structured_content == {"result": 42}

        echoed = await session.call_tool("echo", {"text": "héllo, wörld"})
        assert echoed.is_error is False
        assert text_blocks(echoed) == ["héllo, wörld"]
        assert echoed.structured_content == {"result": "héllo, wörld"}

        timed = await session.call_tool("get_time", {})
        assert timed.is_error is False
        [stamp] = text_blocks(timed)
        told = datetime.fromisoformat(stamp)
        assert told.utcoffset() == timedelta(0)
        assert abs(datetime.now(UTC) - told) < timedelta(minutes=5)
        assert timed.structured_content == {"result": stamp}

        # A schema violation is reported, and the session carries on.
        refused = await session.call_tool("add", {"a": "two", "b": 2})
        assert refused.is_error is True
        assert "a" in text_blocks(refused)[0]
        assert text_blocks(await session.call_tool("echo", {"text": "still here"})) == ["still here"]


def run(make_transport: Callable[[], AbstractAsyncContextManager]) -> None:
    """Run the exercise on a fresh transport, bounded by DEADLINE_S."""

    async def bounded() -> None:
        with anyio.fail_after(DEADLINE_S):
            await exercise(make_transport())

    anyio.run(bounded)


@pytest.mark.parametrize("path", ["/mcp", "/sse"])
def test_sse_client(server, path):
    run(lambda: sse_client(server.base_url + path, timeout=10.0, sse_read_timeout=DEADLINE_S))


def test_streamable_http_client(server):
    run(lambda: streamable_http_client(server.url))


def test_stdio_client():
    params = StdioServerParameters(command=sys.executable, args=["app.py", "--stdio"], cwd=str(ROOT))
    with tempfile.TemporaryFile("w+") as errlog:
        run(lambda: stdio_client(params, errlog=errlog))
        errlog.seek(0)
        log = errlog.read()
    # The server's log lines went to stderr, one per request.
    assert "method=tools/call" in log

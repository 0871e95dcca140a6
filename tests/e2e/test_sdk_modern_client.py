"""The Python SDK 2.3 `Client` on the 2026-07-28 wire: pinned to it, and in auto mode with one good probe."""

from __future__ import annotations

import pytest
from mcp import Client

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
async def test_the_sdk_client_lists_and_calls_on_the_modern_wire(server, mode):
    async with Client(server.url, mode=mode) as client:
        tools = await client.list_tools()
        answer = await client.call_tool("echo", {"text": "hi"})
    assert "echo" in [tool.name for tool in tools.tools]
    assert answer.content[0].text == "hi"


async def test_auto_mode_settles_on_2026_without_a_failed_probe(server):
    async with Client(server.url, mode="auto") as client:
        await client.list_tools()
        assert client.protocol_version == "2026-07-28"
    log = server.read_log()
    discover_lines = [line for line in log.splitlines() if "method=server/discover" in line]
    assert discover_lines and all("status=ok" in line for line in discover_lines)

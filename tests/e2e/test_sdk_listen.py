"""The SDK 2.3 `Client` on 2026-07-28 over stdio and HTTP: it settles on the modern era and hears a listen stream."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.subscriptions import ToolsListChanged

from tests.e2e.server_process import ROOT, ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

MODERN = "2026-07-28"
PLUGINS = "tests.e2e.plugins.feature_tools"
WAIT_S = 15.0


@pytest.fixture(scope="module")
def http_server():
    """Our gunicorn with the feature tools (change_registry)."""
    with ServerProcess(env={"MCP_PLUGINS": PLUGINS}) as process:
        yield process


@contextlib.asynccontextmanager
async def our_client(transport: str, mode: str, server: ServerProcess) -> AsyncIterator[Client]:
    """A connected Client to our server over transport, in mode."""
    target: Any = server.url
    with tempfile.NamedTemporaryFile("w+", prefix="mcp-stdio-", suffix=".log") as errlog:
        if transport == "stdio":
            env = {**os.environ, "MCP_PLUGINS": PLUGINS}
            target = stdio_client(StdioServerParameters(command=sys.executable, args=["app.py", "--stdio"],
                                                        cwd=str(ROOT), env=env), errlog=errlog)
        async with Client(target, mode=mode, read_timeout_seconds=30.0) as client:
            yield client


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", [MODERN, "auto"])
async def test_sdk_client_settles_modern_and_hears_tools_list_changed(http_server, transport, mode):
    name = f"rt-{uuid.uuid4().hex[:8]}"
    async with our_client(transport, mode, http_server) as client:
        assert client.protocol_version == MODERN
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

"""A host Flask app with MCP added, served by gunicorn's gevent worker and driven by the official Python SDK.

The app (tests/extension/host_app.py) has its own routes and token login; its principal loader reads the same
tokens, and two of its routes are tools. The SDK connects on Streamable HTTP and legacy SSE (session era) and on
the 2026-07-28 wire (stateless era), with the app's own token in the Authorization header; on one worker in
memory and on two workers sharing a real Redis (a legacy stream's answers then cross workers).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

STATELESS_ERA = "2026-07-28"
TIMEOUT_S = 30.0
ALICE = {"Authorization": "Bearer tok-alice"}


@pytest.fixture(scope="module", params=["memory", "redis"])
def host(request):
    """gunicorn serving the host app built by its factory: one worker in memory, or two sharing a real Redis."""
    env, workers = {}, 1
    if request.param == "redis":
        env, workers = {"MCP_REDIS_URL": request.getfixturevalue("redis_server").url}, 2
    with ServerProcess(app="tests.extension.host_app:create_app()", health_path="/mcp/healthz", env=env,
                       workers=workers) as process:
        yield process


@contextlib.asynccontextmanager
async def session_era(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    """An initialized SDK session on Streamable HTTP."""
    streams = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    async with streams as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def stateless_era(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    """An SDK Client pinned to 2026-07-28."""
    transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
    async with Client(transport, mode=STATELESS_ERA, read_timeout_seconds=TIMEOUT_S) as client:
        assert client.protocol_version == STATELESS_ERA
        yield client


def structured(result: Any) -> Any:
    """A tool result's structured content."""
    return result.structured_content


def test_the_hosts_own_routes_answer_beside_mcp(host):
    assert httpx.get(host.base_url + "/").text == "the host's home page"
    assert httpx.get(host.base_url + "/orders/1").status_code == 401
    assert httpx.get(host.base_url + "/nowhere").json() == {"error": "no such thing here"}
    assert httpx.get(host.base_url + "/mcp/readyz").json()["status"] == "ready"


async def test_the_sdk_calls_a_hint_tool_and_a_route_tool_on_streamable_http(host):
    with anyio.fail_after(TIMEOUT_S):
        async with session_era(host.url, ALICE) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert {"add", "get_order", "create_order"} <= names
            added = await session.call_tool("add", {"a": 2, "b": 3})
            assert [block.text for block in added.content] == ["5"]
            order = await session.call_tool("get_order", {"order_id": 1})
            assert structured(order)["seen_by"] == "alice"
            missing = await session.call_tool("get_order", {"order_id": 99})
            assert missing.is_error and "HTTP 404" in missing.content[0].text


async def test_the_sdk_calls_a_route_tool_on_the_stateless_wire(host):
    with anyio.fail_after(TIMEOUT_S):
        async with stateless_era(host.url, ALICE) as client:
            created = await client.call_tool("create_order", {"shelf": "low", "body": {"item": "oats", "quantity": 1}})
            assert not created.is_error
            assert structured(created)["owner"] == "alice" and structured(created)["shelf"] == "low"
            read = await client.read_resource("config://host")
            assert '"orders"' in read.contents[0].text


async def test_the_sdk_calls_a_route_tool_on_legacy_sse_under_the_mcp_path(host):
    with anyio.fail_after(TIMEOUT_S):
        async with sse_client(host.base_url + "/mcp/sse", headers=ALICE) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                order = await session.call_tool("get_order", {"order_id": 1})
                assert structured(order)["seen_by"] == "alice"


async def test_the_sdk_is_refused_without_the_hosts_login(host):
    with anyio.fail_after(TIMEOUT_S):
        with pytest.raises(BaseException):  # noqa: B017 (the SDK wraps a 401 in its own exception group)
            async with session_era(host.url, {"Authorization": "Bearer tok-nobody"}):
                pass
    assert httpx.post(host.url, json={}, headers={"Authorization": "Bearer tok-nobody"}).status_code == 401


async def test_bob_sees_only_his_tools_and_the_host_refuses_his_delete(host):
    with anyio.fail_after(TIMEOUT_S):
        async with stateless_era(host.url, {"Authorization": "Bearer tok-bob"}) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"add", "get_order", "delete_order"}
            refused = await client.call_tool("delete_order", {"order_id": 1})
            assert refused.is_error and "HTTP 403" in refused.content[0].text

"""examples/bookshop: an existing Flask app with MCP added, driven by the official Python SDK on every wire.

The shop's own routes keep answering; its login decides who the MCP caller is; its routes exposed as tools run
through its own hooks and error pages.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.server_process import ROOT, free_port
from tests.support.waiting import wait_answering

pytestmark = pytest.mark.e2e

FLASK = str(Path(sys.executable).with_name("flask"))
APP = "examples.bookshop.app"
DEADLINE_S = 60.0
ALICE = {"Authorization": "Bearer alice-token"}
BOB = {"Authorization": "Bearer bob-token"}


@pytest.fixture(scope="module")
def shop():
    """The bookshop under `flask mcp serve` (gunicorn, gevent worker) on a free port; its base URL."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="bookshop-", suffix=".log", delete=False)
    process = subprocess.Popen([FLASK, "--app", APP, "mcp", "serve", "--bind", f"127.0.0.1:{port}"], cwd=ROOT,
                               stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "MCP_LOG_LEVEL": "INFO"})
    try:
        wait_answering(f"http://127.0.0.1:{port}/")  # the shop's own front page
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        Path(log.name).unlink(missing_ok=True)


def test_the_shops_own_routes_still_answer(shop):
    assert httpx.get(shop + "/").text == "Welcome to the bookshop"
    assert httpx.get(shop + "/books/1").json()["title"] == "The Hobbit"
    missing = httpx.get(shop + "/books/99")
    assert missing.status_code == 404 and missing.json()["detail"] == "no book 99"


def test_a_visitor_without_the_shops_login_gets_401_from_mcp(shop):
    answer = httpx.post(shop + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        headers={"Accept": "application/json, text/event-stream"})
    assert answer.status_code == 401


@asynccontextmanager
async def session_era(shop: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    """An SDK ClientSession over Streamable HTTP with the shop's login in every request."""
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            streamable_http_client(shop + "/mcp", http_client=http) as (read, write, *_), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def stateless_era(shop: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    """An SDK Client pinned to 2026-07-28 with the shop's login in every request."""
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            Client(streamable_http_client(shop + "/mcp", http_client=http), mode="2026-07-28") as client:
        assert client.protocol_version == "2026-07-28"
        yield client


async def shop_through(client) -> dict:
    """What an AI client sees and does in the shop: the tool list and the answer of each kind of call."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    found = await client.call_tool("find_books", {"genre": "fantasy", "max_price": 20})
    book = await client.call_tool("get_book", {"book_id": 2})
    missing = await client.call_tool("get_book", {"book_id": 99})
    ordered = await client.call_tool("create_order", {"body": {"book_id": 1, "quantity": 2}})
    return {"tools": tools, "found": found, "book": book, "missing": missing, "ordered": ordered}


def check_shop(seen: dict, customer: str | None) -> None:
    """The tools carry inferred schemas and hints; each call's answer is the route's, through its own checks."""
    tools = seen["tools"]
    assert {"find_books", "get_book", "create_order", "get_order"} <= set(tools)
    genre = tools["find_books"].input_schema["properties"]["genre"]
    assert genre["enum"] == ["fantasy", "science fiction"]
    assert tools["find_books"].input_schema["required"] == ["genre"]
    assert tools["get_book"].input_schema["properties"]["book_id"]["type"] == "integer"
    assert tools["get_book"].annotations.read_only_hint is True
    assert seen["found"].structured_content == {"result": ["A Wizard of Earthsea", "The Hobbit"]}
    assert seen["book"].is_error is False and seen["book"].structured_content["title"] == "Dune"
    assert seen["missing"].is_error is True and "404" in seen["missing"].content[0].text
    if customer is None:  # no login on stdio: the shop's own check refuses the order
        assert seen["ordered"].is_error is True and "401" in seen["ordered"].content[0].text
    else:
        assert seen["ordered"].is_error is False
        assert seen["ordered"].structured_content["customer"] == customer


def test_streamable_http_session_as_alice(shop):
    async def run() -> dict:
        with anyio.fail_after(DEADLINE_S):
            async with session_era(shop, ALICE) as session:
                return await shop_through(session)

    check_shop(anyio.run(run), "alice")


def test_2026_07_28_as_bob_and_the_shop_keeps_alices_order_hers(shop):
    async def run() -> tuple[dict, object]:
        with anyio.fail_after(DEADLINE_S):
            async with stateless_era(shop, ALICE) as alice:
                placed = await alice.call_tool("create_order", {"body": {"book_id": 3, "quantity": 1}})
                order = placed.structured_content
            async with stateless_era(shop, BOB) as bob:
                seen = await shop_through(bob)
                peek = await bob.call_tool("get_order", {"order_id": order["id"]})
                return seen, peek

    seen, peek = anyio.run(run)
    check_shop(seen, "bob")
    assert peek.is_error is True and "404" in peek.content[0].text


def test_stdio_serves_the_shop_as_the_local_user():
    params = StdioServerParameters(command=FLASK, args=["--app", APP, "mcp", "stdio"], cwd=str(ROOT))

    async def run() -> dict:
        with anyio.fail_after(DEADLINE_S), tempfile.TemporaryFile("w+") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await shop_through(session)

    check_shop(anyio.run(run), None)

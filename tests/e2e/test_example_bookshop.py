"""examples/bookshop: an existing Flask app with MCP added, driven by the official Python SDK on every wire.

The shop's own routes keep answering; its login decides who the MCP caller is; its routes exposed as tools run
through its own hooks and error pages. Its own tools use its `db.session` and `current_app.config`: each test
writes rows through the shop's own routes (a book with a title of its own, orders of it) and checks that the MCP
tools, resource and prompt read them back, that a task counts them and that cancel_order, after asking the user,
writes what the shop's route then reads; and that they read the shipping fee this module configured. Every
process of the shop here (gunicorn, stdio, `flask mcp call`) uses this module's one SQLite file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from mcp import Client, ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.server_process import ROOT, free_port
from tests.e2e.stateless_client import post, stateless_meta, stateless_request
from tests.support.waiting import wait_answering, wait_until

pytestmark = pytest.mark.e2e

FLASK = str(Path(sys.executable).with_name("flask"))
APP = "examples.bookshop.app"
DEADLINE_S = 60.0
ALICE = {"Authorization": "Bearer alice-token"}  # staff
BOB = {"Authorization": "Bearer bob-token"}  # a customer
# The shop's config as this module sets it (FLASK_SHIPPING_FEE): not the shop's default of 3.5.
SHIPPING_FEE = 4.25
NEW_BOOK_PRICE = 30.0  # dearer than find_books' max_price in shop_through, below free shipping (40)
WITH_TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
ASKS = {"elicitation": {}}


@pytest.fixture(scope="module")
def shop_env(tmp_path_factory) -> dict[str, str]:
    """The environment every process of the shop runs with: this module's SQLite file and shipping fee."""
    database = tmp_path_factory.mktemp("bookshop") / "shop.sqlite"
    return {"FLASK_SQLALCHEMY_DATABASE_URI": f"sqlite:///{database}", "FLASK_SHIPPING_FEE": str(SHIPPING_FEE)}


@pytest.fixture(scope="module")
def shop(shop_env):
    """The bookshop under `flask mcp serve` (gunicorn, gevent worker) on a free port; its base URL."""
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="bookshop-", suffix=".log", delete=False)
    process = subprocess.Popen([FLASK, "--app", APP, "mcp", "serve", "--bind", f"127.0.0.1:{port}"], cwd=ROOT,
                               stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "MCP_LOG_LEVEL": "INFO", **shop_env})
    try:
        wait_answering(f"http://127.0.0.1:{port}/")  # the shop's own front page
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
        Path(log.name).unlink(missing_ok=True)


# rows written through the shop's own routes
def new_book(shop: str) -> dict[str, Any]:
    """Put a book with a title no other test uses on the fantasy shelf, as staff, through POST /books."""
    added = httpx.post(shop + "/books", headers=ALICE, json={
        "title": f"The Tombs of Atuan {uuid.uuid4().hex[:8]}", "genre": "fantasy", "price": NEW_BOOK_PRICE})
    assert added.status_code == 201, added.text
    return added.json()


def place_order(shop: str, headers: dict[str, str], book_id: int, quantity: int) -> dict[str, Any]:
    """Order copies of a book through POST /orders, as the customer the headers sign in."""
    placed = httpx.post(shop + "/orders", headers=headers, json={"book_id": book_id, "quantity": quantity})
    assert placed.status_code == 201, placed.text
    return placed.json()


def order_status(shop: str, headers: dict[str, str], order_id: int) -> str:
    """An order's status as the shop's own GET /orders/<id> reads it."""
    found = httpx.get(f"{shop}/orders/{order_id}", headers=headers)
    assert found.status_code == 200, found.text
    return found.json()["status"]


# the shop through an SDK client: its routes made tools, and its own tools on its database
def test_the_shops_own_routes_still_answer(shop):
    assert httpx.get(shop + "/").text == "Welcome to the bookshop"
    assert httpx.get(shop + "/books/1").json()["title"] == "The Hobbit"
    missing = httpx.get(shop + "/books/99999")
    assert missing.status_code == 404 and missing.json()["detail"] == "no book 99999"
    assert httpx.post(shop + "/books", headers=BOB, json={}).status_code == 403  # staff only


def test_a_visitor_without_the_shops_login_gets_401_from_mcp(shop):
    answer = httpx.post(shop + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                        headers={"Accept": "application/json, text/event-stream"})
    assert answer.status_code == 401


class Customer:
    """An elicitation callback that confirms every question, keeping what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        """Say yes."""
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})


@asynccontextmanager
async def session_era(shop: str, headers: dict[str, str], **callbacks: Any) -> AsyncIterator[ClientSession]:
    """An SDK ClientSession over Streamable HTTP with the shop's login in every request."""
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            streamable_http_client(shop + "/mcp", http_client=http) as (read, write, *_), \
            ClientSession(read, write, **callbacks) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def sdk_client(shop: str, headers: dict[str, str], **options: Any) -> AsyncIterator[Client]:
    """An SDK Client (its default mode unless options give one) with the shop's login in every request."""
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            Client(streamable_http_client(shop + "/mcp", http_client=http), **options) as client:
        yield client


async def shop_through(client) -> dict:
    """What an AI client sees and does in the shop: the tool list and the answer of each kind of call."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    found = await client.call_tool("find_books", {"genre": "fantasy", "max_price": 20})
    book = await client.call_tool("get_book", {"book_id": 2})
    missing = await client.call_tool("get_book", {"book_id": 99999})
    ordered = await client.call_tool("create_order", {"body": {"book_id": 1, "quantity": 2}})
    return {"tools": tools, "found": found, "book": book, "missing": missing, "ordered": ordered}


def check_shop(seen: dict, customer: str | None) -> None:
    """The tools carry inferred schemas and hints; each call's answer is the route's, through its own checks."""
    tools = seen["tools"]
    assert {"find_books", "shipping_cost", "my_orders", "cancel_order", "get_book", "create_order",
            "get_order"} <= set(tools)
    assert ("sales_report" in tools) is (customer != "bob")  # staff only, as the shop's login grants it
    genre = tools["find_books"].input_schema["properties"]["genre"]
    assert genre["enum"] == ["fantasy", "science fiction"]
    assert tools["find_books"].input_schema["required"] == ["genre"]
    assert tools["get_book"].input_schema["properties"]["book_id"]["type"] == "integer"
    assert tools["get_book"].annotations.read_only_hint is True
    # The three books create_app put on the shelves, read by the tool from the database.
    assert seen["found"].structured_content == {"result": ["A Wizard of Earthsea", "The Hobbit"]}
    assert seen["book"].is_error is False and seen["book"].structured_content["title"] == "Dune"
    assert seen["missing"].is_error is True and "404" in seen["missing"].content[0].text
    if customer is None:  # no login on stdio: the shop's own check refuses the order
        assert seen["ordered"].is_error is True and "401" in seen["ordered"].content[0].text
    else:
        assert seen["ordered"].is_error is False
        assert seen["ordered"].structured_content["customer"] == customer


async def database_through(client, book: dict[str, Any], order: dict[str, Any]) -> dict:
    """Read the rows a test wrote, and cancel its order (the client's callback answers the question)."""
    return {
        "found": await client.call_tool("find_books", {"genre": "fantasy", "max_price": 100}),
        "cost": await client.call_tool("shipping_cost", {"book_id": book["id"], "quantity": 1}),
        "mine": await client.call_tool("my_orders", {}),
        "catalogue": await client.read_resource("shop://catalogue"),
        "prompt": await client.get_prompt("recommend", {"genre": "fantasy"}),
        "cancelled": await client.call_tool("cancel_order", {"order_id": order["id"]}),
    }


def check_database(seen: dict, book: dict[str, Any], order: dict[str, Any], customer: Customer) -> None:
    """Each answer holds the rows written through the shop's routes, and the fee from the shop's config."""
    assert book["title"] in seen["found"].structured_content["result"]
    assert seen["cost"].structured_content == {"title": book["title"], "books": NEW_BOOK_PRICE,
                                               "shipping": SHIPPING_FEE, "total": NEW_BOOK_PRICE + SHIPPING_FEE}
    mine = {entry["id"]: entry for entry in seen["mine"].structured_content["result"]}
    assert mine[order["id"]] == {**order, "status": "placed"}  # read before the cancellation
    [contents] = seen["catalogue"].contents
    assert {"id": book["id"], "title": book["title"], "genre": "fantasy", "price": NEW_BOOK_PRICE} in json.loads(
        contents.text)["books"]
    assert book["title"] in seen["prompt"].messages[0].content.text
    assert customer.asked == [f"Cancel order {order['id']} ({order['quantity']} x {book['title']})?"]
    assert seen["cancelled"].is_error is False
    assert seen["cancelled"].content[0].text == f"Order {order['id']} is cancelled."


def rows_for(shop: str, headers: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A new book and an order of 3 copies of it by the customer the headers sign in."""
    book = new_book(shop)
    return book, place_order(shop, headers, book["id"], 3)


def test_streamable_http_session_uses_the_shops_database(shop):
    book, order = rows_for(shop, ALICE)
    customer = Customer()

    async def run() -> tuple[dict, dict]:
        with anyio.fail_after(DEADLINE_S):
            async with session_era(shop, ALICE, elicitation_callback=customer) as session:
                return await shop_through(session), await database_through(session, book, order)

    seen, rows = anyio.run(run)
    check_shop(seen, "alice")
    check_database(rows, book, order, customer)
    assert order_status(shop, ALICE, order["id"]) == "cancelled"  # written by the tool, read by the route


def test_the_sdk_clients_default_mode_uses_the_shops_database(shop):
    book, order = rows_for(shop, BOB)
    customer = Customer()

    async def run() -> tuple[str, dict, dict]:
        with anyio.fail_after(DEADLINE_S):
            async with sdk_client(shop, BOB, elicitation_callback=customer) as client:
                return (client.protocol_version, await shop_through(client),
                        await database_through(client, book, order))

    version, seen, rows = anyio.run(run)
    assert version == "2026-07-28"  # what the SDK's default mode (auto) negotiates with this server
    check_shop(seen, "bob")
    check_database(rows, book, order, customer)
    assert order_status(shop, BOB, order["id"]) == "cancelled"


def test_legacy_sse_session_uses_the_shops_database(shop):
    book, order = rows_for(shop, BOB)
    customer = Customer()

    async def run() -> tuple[dict, dict]:
        with anyio.fail_after(DEADLINE_S):
            async with sse_client(shop + "/mcp/sse", headers=BOB) as (read, write), \
                    ClientSession(read, write, elicitation_callback=customer) as session:
                await session.initialize()
                return await shop_through(session), await database_through(session, book, order)

    seen, rows = anyio.run(run)
    check_shop(seen, "bob")
    check_database(rows, book, order, customer)
    assert order_status(shop, BOB, order["id"]) == "cancelled"


def test_2026_07_28_as_bob_and_the_shop_keeps_alices_order_hers(shop):
    async def run() -> tuple[dict, object, object]:
        with anyio.fail_after(DEADLINE_S):
            async with sdk_client(shop, ALICE, mode="2026-07-28") as alice:
                assert alice.protocol_version == "2026-07-28"
                placed = await alice.call_tool("create_order", {"body": {"book_id": 3, "quantity": 1}})
                order = placed.structured_content
            async with sdk_client(shop, BOB, mode="2026-07-28") as bob:
                seen = await shop_through(bob)
                peek = await bob.call_tool("get_order", {"order_id": order["id"]})
                mine = await bob.call_tool("my_orders", {})
                return seen, peek, (order, mine)

    seen, peek, (order, mine) = anyio.run(run)
    check_shop(seen, "bob")
    assert peek.is_error is True and "404" in peek.content[0].text
    assert order["id"] not in [entry["id"] for entry in mine.structured_content["result"]]
    assert order_status(shop, ALICE, order["id"]) == "placed"  # the route tool wrote it, as alice


# the 2026-07-28 wire by hand: a task, and an input round
def stateless_call(shop: str, headers: dict[str, str], method: str, params: dict[str, Any],
                   capabilities: dict[str, Any], **more_headers: str) -> dict[str, Any]:
    """One 2026-07-28 request with the shop's login; its result (asserting there is one)."""
    message = stateless_request(method, params, meta=stateless_meta(
        **{"io.modelcontextprotocol/clientCapabilities": capabilities}))
    with httpx.Client(timeout=30) as http:
        answer = post(http, shop + "/mcp", message, **headers, **more_headers)
    assert answer.status_code == 200, answer.text
    assert "result" in answer.json(), answer.text
    return answer.json()["result"]


def test_a_task_on_2026_07_28_counts_the_orders_placed_through_the_shop(shop):
    book = new_book(shop)
    place_order(shop, BOB, book["id"], 3)
    place_order(shop, BOB, book["id"], 2)
    created = stateless_call(shop, ALICE, "tools/call", {"name": "sales_report", "arguments": {"book_id": book["id"]}},
                             WITH_TASKS)
    assert created["resultType"] == "task", created

    def ended() -> dict[str, Any] | None:
        task = stateless_call(shop, ALICE, "tasks/get", {"taskId": created["taskId"]}, WITH_TASKS,
                              **{"Mcp-Name": created["taskId"]})
        return task if task["status"] in ("completed", "failed", "cancelled") else None

    task = wait_until(ended, what="the sales report task to end")
    assert task["status"] == "completed", task
    assert task["result"]["structuredContent"] == {"title": book["title"], "orders": 2, "copies": 5}


def test_an_input_round_on_2026_07_28_cancels_the_order_only_once_answered(shop):
    book, order = rows_for(shop, BOB)
    call = {"name": "cancel_order", "arguments": {"order_id": order["id"]}}
    asked = stateless_call(shop, BOB, "tools/call", call, ASKS)
    assert asked["resultType"] == "input_required", asked
    [(key, question)] = asked["inputRequests"].items()
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == f"Cancel order {order['id']} (3 x {book['title']})?"
    assert order_status(shop, BOB, order["id"]) == "placed"  # nothing written before the answer
    answered = stateless_call(shop, BOB, "tools/call", {
        **call, "requestState": asked["requestState"],
        "inputResponses": {key: {"action": "accept", "content": {"confirm": True}}}}, ASKS)
    assert answered["content"][0]["text"] == f"Order {order['id']} is cancelled."
    assert order_status(shop, BOB, order["id"]) == "cancelled"


# stdio and the flask mcp commands: the local user, on the same database
def test_stdio_serves_the_shop_as_the_local_user(shop, shop_env):
    book = new_book(shop)
    params = StdioServerParameters(command=FLASK, args=["--app", APP, "mcp", "stdio"], cwd=str(ROOT), env=shop_env)
    not_json: list[Exception] = []

    async def keep_what_is_not_json(message: Any) -> None:
        """The SDK hands a stdout line that is not JSON-RPC to the session as an exception."""
        if isinstance(message, Exception):
            not_json.append(message)

    async def run(errlog) -> tuple[dict, dict]:
        with anyio.fail_after(DEADLINE_S):
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write, message_handler=keep_what_is_not_json) as session:
                await session.initialize()
                return await shop_through(session), {
                    "found": await session.call_tool("find_books", {"genre": "fantasy", "max_price": 100}),
                    "cost": await session.call_tool("shipping_cost", {"book_id": book["id"]}),
                    "mine": await session.call_tool("my_orders", {}),
                }

    with tempfile.TemporaryFile("w+") as errlog:
        seen, rows = anyio.run(run, errlog)
        errlog.seek(0)
        errors = errlog.read()
    check_shop(seen, None)
    assert book["title"] in rows["found"].structured_content["result"]
    assert rows["cost"].structured_content["shipping"] == SHIPPING_FEE
    assert rows["mine"].is_error is True and "Sign in to the shop first" in rows["mine"].content[0].text
    assert not_json == []
    assert "serving MCP on stdio" in errors  # the server's stderr is here, so a warning would be too
    assert "MonkeyPatchWarning" not in errors, errors


def flask_mcp(shop_env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """Run `flask --app examples.bookshop.app mcp ARGS` on this module's database."""
    return subprocess.run([FLASK, "--app", APP, "mcp", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=DEADLINE_S, env={**os.environ, "MCP_LOG_LEVEL": "WARNING", **shop_env})


def test_flask_mcp_call_reads_the_shops_database_as_the_local_user(shop, shop_env):
    book = new_book(shop)
    place_order(shop, BOB, book["id"], 4)
    found = flask_mcp(shop_env, "call", "find_books", '{"genre": "fantasy", "max_price": 100}')
    assert found.returncode == 0, found.stderr
    assert book["title"] in json.loads(found.stdout)["structuredContent"]["result"]
    # A staff-only tool over HTTP: the local user may use every tool.
    report = flask_mcp(shop_env, "call", "sales_report", json.dumps({"book_id": book["id"]}))
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["structuredContent"] == {"title": book["title"], "orders": 1, "copies": 4}


def test_flask_mcp_tools_lists_every_tool_for_the_local_user(shop_env):
    listed = flask_mcp(shop_env, "tools")
    assert listed.returncode == 0, listed.stderr
    names = {line.split()[0] for line in listed.stdout.splitlines()}
    assert names == {"find_books", "shipping_cost", "my_orders", "cancel_order", "sales_report", "get_book",
                     "create_order", "get_order"}

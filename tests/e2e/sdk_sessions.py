"""The official MCP SDK client over either transport, with every notification it receives recorded.

`open_session(transport, url, **callbacks)` yields an initialized `ClientSession` and a
`Recorder`; waits are bounded by `WAIT_S` and poll a condition, never a fixed sleep.
The `anyio_backend` and `transport` fixtures of the SDK tests are in conftest.py.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_tools import Registry

TRANSPORTS = ("sse", "streamable")
# Every wait for something the server sends is bounded by this.
WAIT_S = 15.0
POLL_S = 0.02
# Each SDK request fails instead of hanging if the server never answers.
REQUEST_TIMEOUT_S = 30.0
FEATURE_PLUGINS = "tests.conformance.fixtures,tests.e2e.plugins.feature_tools"
PAGE_SIZE = 2


def feature_env(**extra: str) -> dict[str, str]:
    """The environment of a feature server: the fixture and feature plugins, two items per list page."""
    return {"MCP_PLUGINS": FEATURE_PLUGINS, "MCP_PAGE_SIZE": str(PAGE_SIZE), **extra}


def dump(model: Any) -> Any:
    """An SDK model (or list of them) as the JSON it stands for."""
    if isinstance(model, list):
        return [dump(item) for item in model]
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def b64(data: bytes) -> str:
    """Base64 text of bytes, as MCP carries binary data."""
    return base64.b64encode(data).decode("ascii")


def expected_registry() -> Registry:
    """The registry the feature server builds at start: mcp_tools plus the two plugin modules."""
    return Registry.discover(plugins=FEATURE_PLUGINS.split(","))


class Recorder:
    """What the server sent a session besides responses: notifications, log messages, progress."""

    def __init__(self) -> None:
        self.notifications: list[dict[str, Any]] = []
        self.logs: list[dict[str, Any]] = []
        self.errors: list[Exception] = []

    async def message_handler(self, message: Any) -> None:
        """Keep every server notification as its JSON; transport exceptions apart."""
        if isinstance(message, Exception):
            self.errors.append(message)
        else:
            self.notifications.append(dump(message))

    async def logging_callback(self, params: types.LoggingMessageNotificationParams) -> None:
        """Keep every notifications/message's params."""
        self.logs.append(dump(params))

    def methods(self) -> list[str]:
        """The methods of the notifications received so far, in order."""
        return [n["method"] for n in self.notifications]

    def of(self, method: str) -> list[dict[str, Any]]:
        """The params of each notification with this method, in order."""
        return [n.get("params", {}) for n in self.notifications if n["method"] == method]


class ProgressLog:
    """A progress_callback that keeps (progress, total, message) in arrival order."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, float | None, str | None]] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.updates.append((progress, total, message))


@contextlib.asynccontextmanager
async def open_session(transport: str, url: str, **callbacks: Any) -> AsyncIterator[tuple[ClientSession, Recorder]]:
    """Connect the SDK client over transport, initialize, and yield the session with its recorder."""
    recorder = Recorder()
    streams = sse_client(url) if transport == "sse" else streamable_http_client(url)
    try:
        async with streams as (read, write):
            async with ClientSession(
                read, write, read_timeout_seconds=REQUEST_TIMEOUT_S,
                logging_callback=recorder.logging_callback, message_handler=recorder.message_handler, **callbacks,
            ) as session:
                await session.initialize()
                await wait_for_stream(session)
                yield session, recorder
    except BaseExceptionGroup as group:
        # The SDK's task groups wrap a failing assertion in an exception group; report the assertion itself
        # (pytest on Python 3.11 can even crash formatting the group).
        leaves = leaf_exceptions(group)
        if len(leaves) == 1:
            raise leaves[0] from None
        raise


def session_to(server: Any, transport: str, **callbacks: Any) -> contextlib.AbstractAsyncContextManager:
    """An SDK session to a test server (a ServerProcess) over transport."""
    return open_session(transport, server.url, **callbacks)


def leaf_exceptions(group: BaseExceptionGroup) -> list[BaseException]:
    """The exceptions inside a (nested) exception group."""
    leaves: list[BaseException] = []
    for exception in group.exceptions:
        leaves.extend(leaf_exceptions(exception) if isinstance(exception, BaseExceptionGroup) else [exception])
    return leaves


async def wait_for_stream(session: ClientSession) -> None:
    """Wait until the session's stream is attached on the server: Streamable HTTP opens it after initialize."""
    with anyio.move_on_after(WAIT_S):
        while not (await session.call_tool("stream_open", {})).structured_content["result"]:
            await anyio.sleep(POLL_S)
        return
    raise AssertionError(f"the session's stream was not attached within {WAIT_S:g} s")


async def list_every_page(fetch: Callable[..., Any], key: str) -> tuple[list[Any], list[str]]:
    """Follow nextCursor to the end; return every item and the cursors used."""
    items: list[Any] = []
    cursors: list[str] = []
    params = None
    for _ in range(1000):  # bounded: a cursor loop must end
        page = await fetch(params=params)
        items.extend(getattr(page, key))
        if page.next_cursor is None:
            return items, cursors
        cursors.append(page.next_cursor)
        params = types.PaginatedRequestParams(cursor=page.next_cursor)
    raise AssertionError("pagination did not end")


async def rpc_error(request: Callable[..., Any], *args: Any) -> types.ErrorData:
    """Await request(*args), which must fail with a JSON-RPC error, and return that error."""
    with pytest.raises(MCPError) as failure:
        await request(*args)
    return failure.value.error

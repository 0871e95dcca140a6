"""Client sessions for the load generator: legacy HTTP+SSE, Streamable HTTP and the 2026-07-28 wire, on aiohttp.

Each legacy session completes the MCP handshake, then `call()` sends one request and
waits for the response with the same id. A stateless session has no handshake and no
session: one `server/discover` checks the server speaks 2026-07-28, then every call
is a stateless POST carrying the version in its headers and `_meta`. Failures raise `CallFailed` with a short
kind ("timeout", "http_404", "rpc_-32602", ...) that the generator counts.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any
from urllib.parse import urljoin

import aiohttp
import orjson

__all__ = ["CallFailed", "StatelessSession", "SseSession", "StreamableSession", "stateless_request", "open_session"]

SSE_VERSION = "2024-11-05"
STREAMABLE_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "bench-load", "version": "1.0.0"}
STATELESS_VERSION = "2026-07-28"
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
    "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
    "io.modelcontextprotocol/clientCapabilities": {},
}


class CallFailed(Exception):
    """A call (or the handshake) did not produce a good response; `kind` says why."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def initialize_request(request_id: int, version: str) -> dict[str, Any]:
    """The initialize request the handshake sends."""
    return {
        "jsonrpc": "2.0", "id": request_id, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT_INFO},
    }


INITIALIZED = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def check_response(message: Any) -> dict[str, Any]:
    """Raise CallFailed for an error response; return the result."""
    if not isinstance(message, dict):
        raise CallFailed("bad_message")
    if "error" in message:
        raise CallFailed(f"rpc_{message['error'].get('code')}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise CallFailed("bad_message")
    return result


async def iter_sse(content: aiohttp.StreamReader):
    """Yield (event, data) for each Server-Sent Event read from a response body."""
    event = "message"
    data: list[bytes] = []
    async for raw in content:
        line = raw.rstrip(b"\r\n")
        if not line:
            if data:
                yield event, b"\n".join(data)
            event, data = "message", []
        elif line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value[:1] == b" " else value)
        elif line.startswith(b"event:"):
            event = line[6:].strip().decode()
        # id:, retry: and ": comments" need nothing here.


class SseSession:
    """A legacy session: one GET stream that carries every answer, and POSTs that get 202."""

    def __init__(self, http: aiohttp.ClientSession, base_url: str, sse_path: str, timeout: float) -> None:
        self.http = http
        self.base_url = base_url
        self.sse_path = sse_path
        self.timeout = timeout
        self.ids = itertools.count(1)
        self.pending: dict[Any, asyncio.Future] = {}
        self.endpoint: str | None = None
        self.stream: aiohttp.ClientResponse | None = None
        self.reader: asyncio.Task | None = None
        self.closed_reason: str | None = None

    async def open(self) -> None:
        """Open the stream, read the endpoint event, then initialize."""
        self.stream = await self.http.get(self.base_url + self.sse_path, headers={"Accept": "text/event-stream"},
                                          timeout=aiohttp.ClientTimeout(total=None, connect=self.timeout))
        if self.stream.status != 200:
            self.stream.release()
            raise CallFailed(f"http_{self.stream.status}")
        events = iter_sse(self.stream.content)
        try:
            event, data = await asyncio.wait_for(anext(events), self.timeout)
        except (StopAsyncIteration, TimeoutError):
            raise CallFailed("no_endpoint") from None
        if event != "endpoint":
            raise CallFailed("no_endpoint")
        self.endpoint = urljoin(self.base_url + self.sse_path, data.decode())
        self.reader = asyncio.create_task(self.read_forever(events))
        request_id = next(self.ids)
        check_response(await self.exchange(request_id, orjson.dumps(initialize_request(request_id, SSE_VERSION))))
        await self.post(INITIALIZED)

    async def read_forever(self, events) -> None:
        """Hand each message on the stream to the call waiting for its id."""
        try:
            async for event, data in events:
                if event != "message":
                    continue
                message = orjson.loads(data)
                future = self.pending.pop(message.get("id"), None) if isinstance(message, dict) else None
                if future is not None and not future.done():
                    future.set_result(message)
            self.closed_reason = "stream_closed"
        except (aiohttp.ClientError, asyncio.IncompleteReadError, ConnectionError):
            self.closed_reason = "stream_closed"
        for future in self.pending.values():
            if not future.done():
                future.set_exception(CallFailed(self.closed_reason or "stream_closed"))
        self.pending.clear()

    async def post(self, body: bytes) -> None:
        """POST one message to the endpoint; anything but 202 is a failure."""
        if self.endpoint is None:
            raise CallFailed("no_endpoint")  # open() has not read it
        async with self.http.post(self.endpoint, data=body, headers={"Content-Type": "application/json"}) as reply:
            await reply.read()
            if reply.status != 202:
                raise CallFailed(f"http_{reply.status}")

    async def exchange(self, request_id: int, body: bytes) -> Any:
        """POST a request and wait for its answer on the stream."""
        if self.closed_reason is not None:
            raise CallFailed(self.closed_reason)
        future = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        try:
            await self.post(body)
            return await asyncio.wait_for(future, self.timeout)
        except TimeoutError:
            raise CallFailed("timeout") from None
        finally:
            self.pending.pop(request_id, None)

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request; return its result."""
        request_id = next(self.ids)
        body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return check_response(await self.exchange(request_id, body))

    async def close(self) -> None:
        """Hang up the stream."""
        if self.reader is not None:
            self.reader.cancel()
        if self.stream is not None:
            self.stream.close()


class StreamableSession:
    """A Streamable HTTP session: each POST is answered as JSON or as a short SSE stream."""

    def __init__(self, http: aiohttp.ClientSession, url: str, timeout: float) -> None:
        self.http = http
        self.url = url
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.ids = itertools.count(1)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    async def open(self) -> None:
        """Initialize, keep the session id and version, and send notifications/initialized."""
        request_id = next(self.ids)
        result = check_response(await self.exchange(request_id,
                                                    orjson.dumps(initialize_request(request_id, STREAMABLE_VERSION))))
        self.headers["MCP-Protocol-Version"] = result.get("protocolVersion", STREAMABLE_VERSION)
        async with self.http.post(self.url, data=INITIALIZED, headers=self.headers, timeout=self.timeout) as reply:
            await reply.read()
            if reply.status not in (200, 202):
                raise CallFailed(f"http_{reply.status}")

    async def exchange(self, request_id: int, body: bytes, extra_headers: dict[str, str] | None = None) -> Any:
        """POST a request and read its answer from the JSON body or the SSE stream."""
        headers = {**self.headers, **extra_headers} if extra_headers else self.headers
        try:
            async with self.http.post(self.url, data=body, headers=headers, timeout=self.timeout) as reply:
                if reply.status != 200:
                    await reply.read()
                    raise CallFailed(f"http_{reply.status}")
                session_id = reply.headers.get("Mcp-Session-Id")
                if session_id:
                    self.headers["Mcp-Session-Id"] = session_id
                if reply.content_type == "text/event-stream":
                    async for event, data in iter_sse(reply.content):
                        message = orjson.loads(data)
                        if event == "message" and isinstance(message, dict) and message.get("id") == request_id:
                            return message
                    raise CallFailed("stream_closed")
                return orjson.loads(await reply.read())
        except TimeoutError:
            raise CallFailed("timeout") from None

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request; return its result."""
        request_id = next(self.ids)
        body = orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return check_response(await self.exchange(request_id, body))

    async def close(self) -> None:
        """End the session (DELETE); a server that does not support it may refuse."""
        if "Mcp-Session-Id" not in self.headers:
            return
        try:
            async with self.http.delete(self.url, headers=self.headers, timeout=self.timeout) as reply:
                await reply.read()
        except (aiohttp.ClientError, TimeoutError):
            pass


def stateless_request(request_id: int, method: str, params: dict[str, Any]) -> tuple[dict[str, str], bytes]:
    """The routing headers and body of one 2026-07-28 request: version, method and name in both."""
    headers = {"MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": method}
    name = params.get("uri") if method == "resources/read" else params.get("name")
    if method in ("tools/call", "prompts/get", "resources/read") and name is not None:
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**params, "_meta": {**STATELESS_META, **params.get("_meta", {})}}}
    return headers, orjson.dumps(body)


class StatelessSession(StreamableSession):
    """The 2026-07-28 wire: no handshake, no session id; each call a POST that stands alone."""

    async def open(self) -> None:
        """Discover once: the server must list 2026-07-28 (a legacy server fails with its error here)."""
        result = await self.call("server/discover", {})
        if STATELESS_VERSION not in result.get("supportedVersions", ()):
            raise CallFailed("not_stateless")

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request; return its result, which must say it is complete."""
        request_id = next(self.ids)
        headers, body = stateless_request(request_id, method, params)
        result = check_response(await self.exchange(request_id, body, headers))
        if "Mcp-Session-Id" in self.headers:
            raise CallFailed("session_id_minted")
        if result.get("resultType") != "complete":
            raise CallFailed(f"result_type_{result.get('resultType')}")
        return result

    async def close(self) -> None:
        """Nothing to end: the wire has no sessions."""


async def open_session(http: aiohttp.ClientSession, transport: str, base_url: str, paths: dict[str, str],
                       timeout: float) -> SseSession | StreamableSession:
    """Open and initialize one session of the given transport."""
    if transport == "sse":
        session: SseSession | StreamableSession = SseSession(http, base_url, paths["sse"], timeout)
    elif transport == "stateless":
        session = StatelessSession(http, base_url + paths["stateless"], timeout)
    else:
        session = StreamableSession(http, base_url + paths["streamable"], timeout)
    try:
        await session.open()
    except BaseException:
        await session.close()
        raise
    return session

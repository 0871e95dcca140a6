"""Raw-HTTP MCP clients for e2e tests: what curl does, one message at a time, with bounded waits.

`LegacyStream` holds a legacy GET stream open and POSTs to the endpoint it announced;
`StreamableSession` speaks Streamable HTTP with explicit headers. Both use httpx.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from tests.e2e.sse_client import Event, EventParser, iter_events

ENDPOINT_DATA = re.compile(r"^/(mcp|messages)\?session_id=([0-9a-f]{32})$")
# Reads block at most this long; every wait in these tests is bounded by it.
READ_TIMEOUT_S = 15.0
BOTH = "application/json, text/event-stream"

_ids = itertools.count(1)


def request(method: str, params: dict[str, Any] | None = None, request_id: Any = None) -> dict[str, Any]:
    """A JSON-RPC request; a fresh integer id unless one is given."""
    return {"jsonrpc": "2.0", "id": next(_ids) if request_id is None else request_id, "method": method,
            "params": params or {}}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-RPC notification."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(version: str, request_id: Any = None) -> dict[str, Any]:
    """An initialize request asking for the given protocol version."""
    return request("initialize", {"protocolVersion": version, "capabilities": {},
                                  "clientInfo": {"name": "e2e-raw", "version": "0"}}, request_id)


def call_tool(name: str, arguments: dict[str, Any], request_id: Any = None) -> dict[str, Any]:
    """A tools/call request."""
    return request("tools/call", {"name": name, "arguments": arguments}, request_id)


async def aiter_events(response: httpx.Response) -> AsyncIterator[Event]:
    """Parse an async SSE response body into events; comments (keepalives) are skipped."""
    parser = EventParser()
    async for line in response.aiter_lines():
        event = parser.feed(line)
        if event is not None:
            yield event


def client(timeout: float = READ_TIMEOUT_S) -> httpx.Client:
    """An httpx client whose every read is bounded."""
    return httpx.Client(timeout=httpx.Timeout(timeout, connect=5.0))


class LegacyStream:
    """One legacy HTTP+SSE session: the GET stream, and POSTs to the endpoint it announced."""

    def __init__(self, http: httpx.Client, base_url: str, path: str = "/mcp",
                 params: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> None:
        self.http = http
        self.base_url = base_url
        self._context = http.stream("GET", base_url + path, params=params,
                                    headers={"Accept": "text/event-stream", **(headers or {})})
        self.response = self._context.__enter__()
        self.events: Iterator[Event] | None = None
        self.endpoint_data = ""
        self.session_id = ""
        if self.response.status_code == 200:
            self.events = iter_events(self.response)
            first = next(self.events)
            assert first.event == "endpoint", first
            match = ENDPOINT_DATA.match(first.data)
            assert match, first.data
            self.endpoint_data = first.data
            self.session_id = match.group(2)

    @property
    def endpoint(self) -> str:
        """The absolute URL to POST this session's messages to."""
        return self.base_url + self.endpoint_data

    def post(self, message: Any, **kwargs: Any) -> httpx.Response:
        """POST one message (or batch) to the session's endpoint."""
        return self.http.post(self.endpoint, json=message, **kwargs)

    def next_event(self) -> Event:
        """The next event on the stream (raises httpx.ReadTimeout after READ_TIMEOUT_S of silence)."""
        assert self.events is not None, "stream was refused"
        return next(self.events)

    def wait_for(self, request_id: Any) -> dict[str, Any]:
        """Read events until the response to request_id arrives; return it."""
        while True:
            event = self.next_event()
            message = event.json()
            if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                return message

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        """POST a request, check the 202, and return its response from the stream."""
        posted = self.post(message)
        assert posted.status_code == 202, (posted.status_code, posted.text)
        return self.wait_for(message["id"])

    def open(self, version: str = "2024-11-05") -> dict[str, Any]:
        """Initialize the session and send notifications/initialized; return the initialize result."""
        assert self.events is not None, ("the GET stream was refused", self.response.status_code,
                                         self.response.read()[:300])
        answer = self.call(initialize(version))
        assert self.post(notification("notifications/initialized")).status_code == 202
        return answer["result"]

    def close(self) -> None:
        """Drop the connection."""
        self._context.__exit__(None, None, None)

    def __enter__(self) -> LegacyStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class StreamableSession:
    """A Streamable HTTP session driven by hand: initialize, then POSTs carrying Mcp-Session-Id."""

    def __init__(self, http: httpx.Client, url: str, version: str = "2025-06-18") -> None:
        self.http = http
        self.url = url
        self.version = version
        answer = http.post(url, json=initialize(version), headers={"Accept": BOTH})
        assert answer.status_code == 200, (answer.status_code, answer.text)
        self.session_id = answer.headers["Mcp-Session-Id"]
        self.initialize_result = answer.json()["result"]
        assert self.post(notification("notifications/initialized")).status_code == 202

    @property
    def headers(self) -> dict[str, str]:
        """The headers every later request carries."""
        headers = {"Mcp-Session-Id": self.session_id}
        if self.version >= "2025-06-18":
            headers["MCP-Protocol-Version"] = self.version
        return headers

    def post(self, message: Any, accept: str = BOTH, **kwargs: Any) -> httpx.Response:
        """POST one message (or batch) on this session."""
        headers = {"Accept": accept, **self.headers, **kwargs.pop("headers", {})}
        return self.http.post(self.url, json=message, headers=headers, **kwargs)

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        """POST a request asking for JSON only, and return its response."""
        answer = self.post(message, accept="application/json")
        assert answer.status_code == 200, (answer.status_code, answer.text)
        assert answer.headers["content-type"].startswith("application/json")
        return answer.json()

    def open_stream(self, last_event_id: str | None = None, **kwargs: Any):
        """The context manager of a standalone GET stream (optionally resuming after last_event_id)."""
        headers = {"Accept": "text/event-stream", **self.headers, **kwargs.pop("headers", {})}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        return self.http.stream("GET", self.url, headers=headers, **kwargs)

    def delete(self) -> httpx.Response:
        """End the session."""
        return self.http.delete(self.url, headers=self.headers)

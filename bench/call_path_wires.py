"""In-process clients of each wire for bench/call_path.py: a handshake on opening, then `call()` echoes once.

The HTTP wires call the app's WSGI callable as a server would: build the environ, start the response, read the
body to its end and close it (which is when the app's per-request cleanup runs). stdio runs its server on
in-memory pipes. `call()` returns the answer only once it has been read where a client reads it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO, cast

import gevent
import orjson
from flask import Flask
from gevent.queue import Queue
from werkzeug.test import EnvironBuilder

from app import create_app
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.store.memory import MemoryStore
from flask_mcp_gevent.transports.stdio import StdioConnection

__all__ = ["WIRES", "open_client"]

WIRES = ("legacy", "streamable", "2026-07-28", "stdio")
SESSION_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
BOTH = "application/json, text/event-stream"
ANSWER_TIMEOUT_S = 10.0
CLIENT_INFO = {"name": "bench-call-path", "version": "0"}


def settings_for(redis_url: str | None) -> Settings:
    """Default settings, quiet, on the in-memory store or on Redis at redis_url."""
    environ = {"MCP_LOG_LEVEL": "WARNING"}
    if redis_url:
        environ["MCP_REDIS_URL"] = redis_url
    return Settings.from_environ(environ)


def request(method: str, params: dict[str, Any], request_id: Any) -> dict[str, Any]:
    """A JSON-RPC request."""
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def initialize(request_id: Any) -> dict[str, Any]:
    """The handshake's first request."""
    return request("initialize", {"protocolVersion": SESSION_VERSION, "capabilities": {},
                                  "clientInfo": CLIENT_INFO}, request_id)


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def sse_messages(frame: bytes) -> list[dict[str, Any]]:
    """The JSON messages in SSE frames (endpoint events, keep-alives and priming events carry none)."""
    found = []
    for event in frame.split(b"\n\n"):
        lines = event.split(b"\n")
        data = b"\n".join(line[5:].lstrip(b" ") for line in lines if line.startswith(b"data:"))
        if data and not any(line == b"event: endpoint" for line in lines):
            found.append(orjson.loads(data))
    return found


class WsgiServer:
    """Calls an app's WSGI callable the way a server does."""

    def __init__(self, app: Flask) -> None:
        self.app = app

    def start(self, method: str, path: str, headers: dict[str, str], body: Any = None,
              query: str = "") -> tuple[int, dict[str, str], Iterable[bytes]]:
        """Start a request: its status, response headers (lower-cased names) and the body still to read."""
        data = orjson.dumps(body) if body is not None else None
        environ = EnvironBuilder(path=path, method=method, headers=list(headers.items()), data=data, query_string=query,
                                 content_type="application/json" if data is not None else None).get_environ()
        environ["REMOTE_ADDR"] = "127.0.0.1"
        started: dict[str, Any] = {}

        def start_response(status: str, response_headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Callable[[bytes], object]:
            started["status"] = int(status.split()[0])
            started["headers"] = {name.lower(): value for name, value in response_headers}
            return lambda data: None  # WSGI's write(): nothing here uses it

        chunks = self.app(environ, start_response)
        return started["status"], started["headers"], chunks

    def send(self, method: str, path: str, headers: dict[str, str], body: Any = None,
             query: str = "") -> tuple[int, dict[str, str], bytes]:
        """A whole request: status, headers and the body read to its end, the response closed."""
        status, response_headers, chunks = self.start(method, path, headers, body, query)
        try:
            data = b"".join(chunks)
        finally:
            getattr(chunks, "close", lambda: None)()
        return status, response_headers, data


def stop_app(app: Flask) -> None:
    """Close the app's streams, then stop its store's greenlets and connections (the Redis store has some)."""
    extension = app.extensions["mcp"]
    extension.shutdown()
    getattr(extension.server.store, "stop", lambda: None)()


def answer_of(headers: dict[str, str], data: bytes) -> dict[str, Any]:
    """The one response in a POST's body, JSON or a short SSE stream."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        return [m for m in sse_messages(data) if "method" not in m][-1]
    return orjson.loads(data)


class Client:
    """One wire's client: call() echoes once and returns the answer as read."""

    expected_text = "hello"

    def __init__(self) -> None:
        self.ids = itertools.count(1)

    def echo(self) -> dict[str, Any]:
        """A tools/call of echo with a fresh id."""
        return request("tools/call", {"name": "echo", "arguments": {"text": self.expected_text}}, next(self.ids))

    def call(self) -> dict[str, Any]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the client opened."""


class StreamableClient(Client):
    """Streamable HTTP: initialize opens a session; each call is a POST answered on its own."""

    def __init__(self, app: Flask) -> None:
        super().__init__()
        self.app = app
        self.server = WsgiServer(app)
        _, headers, data = self.server.send("POST", "/mcp", {"Accept": BOTH}, initialize(0))
        self.headers = {"Accept": BOTH, "Mcp-Session-Id": headers["mcp-session-id"],
                        "MCP-Protocol-Version": SESSION_VERSION}
        status, _, _ = self.server.send("POST", "/mcp", self.headers, INITIALIZED)
        if status != 202:
            raise RuntimeError(f"notifications/initialized answered {status}")

    def call(self) -> dict[str, Any]:
        """POST one call and read its answer from the response."""
        _, headers, data = self.server.send("POST", "/mcp", self.headers, self.echo())
        return answer_of(headers, data)

    def close(self) -> None:
        """DELETE the session and stop the app's server."""
        self.server.send("DELETE", "/mcp", self.headers)
        stop_app(self.app)


class StatelessClient(Client):
    """2026-07-28: no handshake; every call carries its version in a header and in _meta."""

    def __init__(self, app: Flask) -> None:
        super().__init__()
        self.app = app
        self.server = WsgiServer(app)

    def call(self) -> dict[str, Any]:
        """POST one stateless call and read its answer from the response."""
        message = self.echo()
        message["params"]["_meta"] = {"io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                                      "io.modelcontextprotocol/clientCapabilities": {}}
        headers = {"Accept": BOTH, "MCP-Protocol-Version": STATELESS_VERSION, "Mcp-Method": "tools/call",
                   "Mcp-Name": "echo"}
        _, response_headers, data = self.server.send("POST", "/mcp", headers, message)
        return answer_of(response_headers, data)

    def close(self) -> None:
        """Stop the app's server and its store."""
        stop_app(self.app)


class LegacyClient(Client):
    """Legacy HTTP+SSE: GET /mcp opens the stream; each POST answers 202 and its answer comes on the stream."""

    def __init__(self, app: Flask) -> None:
        super().__init__()
        self.app = app
        self.server = WsgiServer(app)
        status, _, stream = self.server.start("GET", "/mcp", {"Accept": "text/event-stream"})
        self.stream: Any = stream  # the app's body: iterated here, closed by close()
        if status != 200:
            raise RuntimeError(f"GET /mcp answered {status}")
        chunks = iter(self.stream)
        endpoint = next(chunks).decode()
        self.query = endpoint.split("data: ", 1)[1].strip().split("?", 1)[1]
        self.inbox: Queue = Queue()
        self.reader = gevent.spawn(self.read_stream, chunks)
        self.post(initialize(0))
        self.answer(0)
        self.post(INITIALIZED)

    def read_stream(self, chunks: Any) -> None:
        """Put every message of the stream in the inbox, as a client's reader does."""
        for chunk in chunks:
            for message in sse_messages(chunk):
                self.inbox.put(message)

    def post(self, message: dict[str, Any]) -> None:
        """POST a message to the session's endpoint; it must be accepted (202)."""
        status, _, data = self.server.send("POST", "/mcp", {}, message, query=self.query)
        if status != 202:
            raise RuntimeError(f"POST answered {status}: {data[:200]!r}")

    def answer(self, request_id: Any) -> dict[str, Any]:
        """The next message on the stream, which must answer request_id."""
        message = self.inbox.get(timeout=ANSWER_TIMEOUT_S)
        if message.get("id") != request_id:
            raise RuntimeError(f"expected the answer to {request_id!r}, got {message!r}")
        return message

    def call(self) -> dict[str, Any]:
        """POST one call and read its answer from the stream."""
        message = self.echo()
        self.post(message)
        return self.answer(message["id"])

    def close(self) -> None:
        """Close the stream (as a client hanging up would) and stop the app's server."""
        self.reader.kill()
        self.stream.close()
        stop_app(self.app)


class StdioClient(Client):
    """stdio: lines in through a queue, lines out through another, the server in its own greenlet."""

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        # As serving/flask_stdio.serve_app builds it: stdio always serves from an in-memory store.
        self.mcp_server = Server(settings, store=MemoryStore(settings))
        self.lines: Queue = Queue()
        self.out: Queue = Queue()
        # This client is the server's stdout: it has the two methods the server calls (write, flush).
        self.connection = StdioConnection(self.mcp_server, iter(self.lines.get, None), cast(BinaryIO, self))
        self.serving = gevent.spawn(self.connection.serve)
        self.send(initialize(0))
        self.answer(0)
        self.send(INITIALIZED)

    def write(self, data: bytes) -> None:
        """The server's stdout: one JSON line per message."""
        self.out.put(orjson.loads(data))

    def flush(self) -> None:
        """Nothing buffered here."""

    def send(self, message: dict[str, Any]) -> None:
        """One line on the server's stdin."""
        self.lines.put(orjson.dumps(message) + b"\n")

    def answer(self, request_id: Any) -> dict[str, Any]:
        """The next line on the server's stdout, which must answer request_id."""
        message = self.out.get(timeout=ANSWER_TIMEOUT_S)
        if message.get("id") != request_id:
            raise RuntimeError(f"expected the answer to {request_id!r}, got {message!r}")
        return message

    def call(self) -> dict[str, Any]:
        """Write one call and read its answer from stdout."""
        message = self.echo()
        self.send(message)
        return self.answer(message["id"])

    def close(self) -> None:
        """End stdin, let the server wind down, stop the server."""
        self.lines.put(None)
        self.serving.join(timeout=ANSWER_TIMEOUT_S)
        self.mcp_server.shutdown()


def open_client(wire: str, redis_url: str | None = None) -> Client:
    """A client of wire, its handshake done, on a fresh app (or stdio server) on the chosen store."""
    settings = settings_for(redis_url)
    if wire == "stdio":
        return StdioClient(settings)
    app = create_app(settings)
    # As gunicorn.conf.py's post_worker_init does before a worker accepts a connection.
    app.extensions["mcp"].server.prepare()
    client = {"legacy": LegacyClient, "streamable": StreamableClient, "2026-07-28": StatelessClient}[wire]
    return client(app)

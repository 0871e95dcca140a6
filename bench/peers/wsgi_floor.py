"""The WSGI floor: a plain WSGI function under the same gunicorn + gevent worker, answering MCP's HTTP wires.

No Flask, no jsonrpcserver, no validation, no checks beyond the session id, no log line: each POST is parsed
with orjson and answered with a fixed-shape result, on the 2026-07-28 wire (no session) and on Streamable HTTP
(initialize mints an Mcp-Session-Id that every later POST must carry; notifications get 202, DELETE ends the
session). It measures what gunicorn and gevent alone cost per call, the part of our CPU per call that no change
to this server's own code can remove.

It also holds legacy SSE (2024-11-05) sessions, for `--idle`: a GET stream sends the endpoint event, then each
answer to its session's POSTs (`?session_id=`, 202), a keepalive comment after 15 quiet seconds; no replay log, no
session record, two response headers. What an idle session costs here is what gunicorn and gevent alone keep per
stream (its greenlet, the request gunicorn holds), the floor under ours.

    gunicorn -k gevent -w 1 --bind 127.0.0.1:8003 bench.peers.wsgi_floor:app
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
from gevent import get_hub
from gevent.hub import Waiter

VERSION = "2026-07-28"
SESSION_VERSION = "2025-06-18"
SERVER_INFO = {"name": "bench-wsgi-floor", "version": "1.0.0"}
DISCOVERED = {"resultType": "complete", "supportedVersions": [VERSION], "capabilities": {"tools": {}},
              "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}
JSON = ("Content-Type", "application/json")
# The Streamable HTTP sessions this worker minted and has not seen ended.
sessions: set[str] = set()
KEEPALIVE_S = 15.0
SSE_HEAD = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]


class LegacyStream:
    """A legacy session's stream: the answers its POSTs queued, and the Waiter of its greenlet while it waits."""

    __slots__ = ("answers", "waiter")

    def __init__(self) -> None:
        self.answers: list[bytes] = []
        self.waiter: Waiter | None = None

    def put(self, data: bytes) -> None:
        """Queue an answer and wake the stream if it waits."""
        self.answers.append(data)
        if self.waiter is not None:
            waiter, self.waiter = self.waiter, None
            get_hub().loop.run_callback(waiter.switch, None)

    def wait(self) -> None:
        """Wait for an answer, at most KEEPALIVE_S."""
        waiter = self.waiter = Waiter()
        timer = get_hub().loop.timer(KEEPALIVE_S)
        timer.start(waiter.switch, None)
        try:
            waiter.get()
        finally:
            timer.close()
            self.waiter = None


# The legacy sessions whose stream is open, by id.
legacy: dict[str, LegacyStream] = {}


def legacy_events(session_id: str, stream: LegacyStream) -> Iterator[bytes]:
    """The endpoint event, then each answer (a keepalive when none came); the session ends with the stream."""
    try:
        yield f"event: endpoint\ndata: /mcp?session_id={session_id}\n\n".encode()
        while True:
            if not stream.answers:
                stream.wait()
            if not stream.answers:
                yield b": keepalive\n\n"
                continue
            yield b"event: message\ndata: " + stream.answers.pop(0) + b"\n\n"
            if not stream.answers:
                yield b""  # the server lets go of the frame it wrote last
    finally:
        legacy.pop(session_id, None)


def legacy_post(session_id: str, message: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """A legacy message: 202 at once; a request's answer goes to the session's stream."""
    stream = legacy.get(session_id)
    if stream is None:
        return reply(start_response, "404 Not Found")
    if "id" in message:
        result = initialized(message) if message.get("method") == "initialize" else answer(message)
        stream.put(bytes(memoryview(orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))))
    return reply(start_response, "202 Accepted")


def answer(message: dict[str, Any]) -> dict[str, Any]:
    """server/discover's fixed result, or an echo of tools/call's text; anything else an empty result."""
    if message.get("method") == "server/discover":
        return DISCOVERED
    arguments = (message.get("params") or {}).get("arguments") or {}
    return {"resultType": "complete", "content": [{"type": "text", "text": arguments.get("text", "")}],
            "isError": False}


def initialized(message: dict[str, Any]) -> dict[str, Any]:
    """initialize's result: the client's version when it is one we know, tools only."""
    asked = (message.get("params") or {}).get("protocolVersion")
    return {"protocolVersion": asked if asked in ("2024-11-05", "2025-03-26", SESSION_VERSION) else SESSION_VERSION,
            "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO}


def reply(start_response: Callable[..., Any], status: str, body: bytes = b"",
          headers: tuple[tuple[str, str], ...] = ()) -> list[bytes]:
    """Start a response with a Content-Length and return its body."""
    start_response(status, [*headers, ("Content-Length", str(len(body)))])
    return [body]


def session_post(environ: dict[str, Any], message: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """A Streamable HTTP POST: initialize mints a session, anything else needs a live one."""
    if message.get("method") == "initialize":
        session_id = secrets.token_hex(16)
        sessions.add(session_id)
        body = orjson.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": initialized(message)})
        return reply(start_response, "200 OK", body, (JSON, ("Mcp-Session-Id", session_id)))
    if environ.get("HTTP_MCP_SESSION_ID") not in sessions:
        return reply(start_response, "404 Not Found")
    if "id" not in message:
        return reply(start_response, "202 Accepted")
    body = orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer(message)})
    return reply(start_response, "200 OK", body, (JSON,))


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Answer one POST as JSON, end a session on DELETE (anything else 405, which is also how the bench sees it
    is up)."""
    method = environ.get("REQUEST_METHOD")
    if method == "GET" and "HTTP_MCP_SESSION_ID" not in environ and environ.get("PATH_INFO") == "/mcp":
        session_id = secrets.token_hex(16)
        stream = legacy[session_id] = LegacyStream()
        start_response("200 OK", SSE_HEAD)
        return legacy_events(session_id, stream)
    if method == "DELETE":
        sessions.discard(environ.get("HTTP_MCP_SESSION_ID", ""))
        return reply(start_response, "204 No Content")
    if method != "POST":
        return reply(start_response, "405 Method Not Allowed", headers=(("Allow", "POST, DELETE"),))
    message = orjson.loads(environ["wsgi.input"].read())
    if environ.get("QUERY_STRING", "").startswith("session_id="):
        return legacy_post(environ["QUERY_STRING"].partition("=")[2], message, start_response)
    if environ.get("HTTP_MCP_PROTOCOL_VERSION") != VERSION:
        return session_post(environ, message, start_response)
    body = orjson.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": answer(message)})
    return reply(start_response, "200 OK", body, (JSON,))

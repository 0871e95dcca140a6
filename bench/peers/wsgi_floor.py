"""The WSGI floor: a plain WSGI function under the same gunicorn + gevent worker, answering MCP's HTTP wires.

No Flask, no jsonrpcserver, no validation, no checks beyond the session id, no log line: each POST is parsed
with orjson and answered with a fixed-shape result, on the 2026-07-28 wire (no session) and on Streamable HTTP
(initialize mints an Mcp-Session-Id that every later POST must carry; notifications get 202, DELETE ends the
session). It measures what gunicorn and gevent alone cost per call, the part of our CPU per call that no change
to this server's own code can remove.

    gunicorn -k gevent -w 1 --bind 127.0.0.1:8003 bench.peers.wsgi_floor:app
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import Any

import orjson

VERSION = "2026-07-28"
SESSION_VERSION = "2025-06-18"
SERVER_INFO = {"name": "bench-wsgi-floor", "version": "1.0.0"}
DISCOVERED = {"resultType": "complete", "supportedVersions": [VERSION], "capabilities": {"tools": {}},
              "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO}}
JSON = ("Content-Type", "application/json")
# The Streamable HTTP sessions this worker minted and has not seen ended.
sessions: set[str] = set()


def answer(message: dict[str, Any]) -> dict[str, Any]:
    """server/discover's fixed result, or an echo of tools/call's text; anything else an empty result."""
    if message.get("method") == "server/discover":
        return DISCOVERED
    arguments = (message.get("params") or {}).get("arguments") or {}
    return {"resultType": "complete", "content": [{"type": "text", "text": arguments.get("text", "")}],
            "isError": False}


def initialized(message: dict[str, Any]) -> dict[str, Any]:
    """initialize's result on Streamable HTTP: the client's version when it is one we know, tools only."""
    asked = (message.get("params") or {}).get("protocolVersion")
    return {"protocolVersion": asked if asked in ("2025-03-26", SESSION_VERSION) else SESSION_VERSION,
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
    if method == "DELETE":
        sessions.discard(environ.get("HTTP_MCP_SESSION_ID", ""))
        return reply(start_response, "204 No Content")
    if method != "POST":
        return reply(start_response, "405 Method Not Allowed", headers=(("Allow", "POST, DELETE"),))
    message = orjson.loads(environ["wsgi.input"].read())
    if environ.get("HTTP_MCP_PROTOCOL_VERSION") != VERSION:
        return session_post(environ, message, start_response)
    body = orjson.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": answer(message)})
    return reply(start_response, "200 OK", body, (JSON,))

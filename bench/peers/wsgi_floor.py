"""The WSGI floor: a plain WSGI function under the same gunicorn + gevent worker, answering the 2026-07-28 wire.

No Flask, no jsonrpcserver, no validation, no checks, no log line: each POST is parsed with orjson and
answered with a fixed-shape result. It measures what gunicorn and gevent alone cost per call, the part of
our CPU per call that no change to this server's own code can remove.

    gunicorn -k gevent -w 1 --bind 127.0.0.1:8003 bench.peers.wsgi_floor:app
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

VERSION = "2026-07-28"
DISCOVERED = {"resultType": "complete", "supportedVersions": [VERSION], "capabilities": {"tools": {}},
              "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bench-wsgi-floor", "version": "1.0.0"}}}


def answer(message: dict[str, Any]) -> dict[str, Any]:
    """server/discover's fixed result, or an echo of tools/call's text; anything else an empty result."""
    if message.get("method") == "server/discover":
        return DISCOVERED
    arguments = (message.get("params") or {}).get("arguments") or {}
    return {"resultType": "complete", "content": [{"type": "text", "text": arguments.get("text", "")}],
            "isError": False}


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Answer one POST as JSON (anything else 405, which is also how the benchmark sees it is up)."""
    if environ.get("REQUEST_METHOD") != "POST":
        start_response("405 Method Not Allowed", [("Allow", "POST"), ("Content-Length", "0")])
        return [b""]
    message = orjson.loads(environ["wsgi.input"].read())
    body = orjson.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": answer(message)})
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]

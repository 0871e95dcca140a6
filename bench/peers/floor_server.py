"""The floor: bare Flask + gevent + jsonrpcserver speaking just enough MCP for the load generator.

No tool-argument validation, no session objects, no Origin checks, no replay: a
stream is a queue in a dict, a POST is `jsonrpcserver.dispatch` with its defaults.
It is the reference for what the stack costs before any of our features.

    gunicorn -k gevent -w 1 --worker-connections 12000 --bind 127.0.0.1:8002 bench.peers.floor_server:app

GET /sse streams (`event: endpoint` first), POST /messages?session_id= answers 202
and pushes the response to that stream; POST /mcp answers Streamable HTTP as JSON.
"""

from __future__ import annotations

import uuid

from flask import Flask, Response, request
from gevent.queue import Queue
from jsonrpcserver import Result, Success, dispatch

app = Flask(__name__)
streams: dict[str, Queue] = {}


def initialize(protocolVersion: str = "2025-06-18", **_ignored) -> Result:  # noqa: N803 (MCP's spelling)
    """Accept whatever version the client asks for."""
    return Success({"protocolVersion": protocolVersion, "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bench-floor", "version": "1.0.0"}})


def initialized(**_ignored) -> Result:
    """Nothing to do."""
    return Success(None)


def ping() -> Result:
    """Answer with an empty result."""
    return Success({})


def tools_call(name: str, arguments: dict | None = None, **_ignored) -> Result:
    """Echo, unchecked."""
    return Success({"content": [{"type": "text", "text": (arguments or {}).get("text", "")}], "isError": False})


METHODS = {"initialize": initialize, "notifications/initialized": initialized, "ping": ping,
           "tools/call": tools_call}


def stream(session_id: str, queue: Queue):
    """Yield the endpoint event, then each queued answer; forget the session when the client leaves."""
    try:
        yield f"event: endpoint\ndata: /messages?session_id={session_id}\n\n".encode()
        while True:
            yield b"event: message\ndata: " + queue.get().encode() + b"\n\n"
    finally:
        streams.pop(session_id, None)


@app.get("/sse")
def open_stream() -> Response:
    """Open a legacy SSE stream."""
    session_id = uuid.uuid4().hex
    streams[session_id] = queue = Queue()
    return Response(stream(session_id, queue), mimetype="text/event-stream", headers={"Cache-Control": "no-cache"})


@app.post("/messages")
@app.post("/messages/")
def post_message() -> Response:
    """Dispatch now; the answer goes to the stream."""
    queue = streams.get(request.args.get("session_id", ""))
    if queue is None:
        return Response(status=404)
    answer = dispatch(request.get_data(as_text=True), methods=METHODS)
    if answer:
        queue.put(answer)
    return Response(status=202)


@app.post("/mcp")
def post_streamable() -> Response:
    """Dispatch and answer as JSON."""
    answer = dispatch(request.get_data(as_text=True), methods=METHODS)
    if not answer:
        return Response(status=202)
    return Response(answer, mimetype="application/json", headers={"Mcp-Session-Id": "floor"})

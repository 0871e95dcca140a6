"""Per-stage CPU cost of one `tools/call echo`, measured in-process (no sockets, no noise from the network).

    python -m bench.micro [--calls 20000]

Each line is microseconds per call for one layer of the hot path, so a change can
be judged without a full load run. Logging goes to /dev/null at the configured level.
"""

from __future__ import annotations

import argparse
import inspect
import io
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import gevent
from flask import Flask, Response
from werkzeug.test import EnvironBuilder

from app import create_app
from flask_mcp_gevent.encoding import dumps, format_sse_event
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.protocol.methods import SESSION_METHODS
from flask_mcp_gevent.protocol.request_context import RequestContext
from flask_mcp_gevent.protocol.tools import run_tool, schema_errors
from flask_mcp_gevent.server import jsonrpc_dispatch

__all__ = ["main"]

ECHO = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
STATELESS_ECHO = (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},'
               b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":'
               b'{"name":"micro","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}')
STATELESS_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                  "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
INIT = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"%s",'
        b'"capabilities":{},"clientInfo":{"name":"micro","version":"1"}}}')


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    """Mean wall microseconds of fn over calls, after a short warm-up (the process is single-threaded)."""
    for _ in range(min(500, calls)):
        fn()
    started = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - started) / calls * 1e6


def wsgi_caller(app: Flask, method: str, path: str, body: bytes, headers: dict[str, str]) -> Callable[[], list]:
    """A function that runs one request through the WSGI app and returns [status, body]."""
    template = EnvironBuilder(method=method, path=path, data=body, headers=headers.items(),
                              content_type="application/json" if body else None).get_environ()

    def call() -> list:
        environ = dict(template)
        environ["wsgi.input"] = io.BytesIO(body)
        seen: list = []

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., object]:
            """Keep the status; the body comes back as the app's iterable, so the write callable goes unused."""
            seen.append(status)
            return seen.append

        chunks = app(environ, start_response)
        seen.append(b"".join(chunks))
        if hasattr(chunks, "close"):
            chunks.close()
        return seen

    return call


def legacy_session(app: Flask) -> tuple[str, object]:
    """Open a legacy session with a live subscription, initialized, as a real client would."""
    server = app.extensions["mcp"].server
    session = server.open_session("sse")
    subscription = server.store.events.subscribe(session.id)
    post = wsgi_caller(app, "POST", f"/mcp?session_id={session.id}", INIT % b"2024-11-05", {})
    post()
    gevent.sleep(0)
    wsgi_caller(app, "POST", f"/mcp?session_id={session.id}",
                b'{"jsonrpc":"2.0","method":"notifications/initialized"}', {})()
    return session.id, subscription


def drain(subscription) -> None:
    """Take what the stream would send, and frame it, as the SSE generator does (without its wait timer)."""
    queue = subscription.queue
    while queue.qsize():
        item = subscription.get(None)
        format_sse_event(item[1], event_id=item[0])


def main(argv: list[str] | None = None) -> int:
    """Print the cost of each stage."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    app = create_app({"MCP_LOG_LEVEL": args.log_level})
    for handler in logging.getLogger("mcp").handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.stream = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    server = app.extensions["mcp"].server
    calls = args.calls

    session_id, subscription = legacy_session(app)
    legacy = wsgi_caller(app, "POST", f"/mcp?session_id={session_id}", ECHO, {})

    def legacy_round_trip() -> None:
        legacy()
        gevent.sleep(0)
        drain(subscription)

    init = wsgi_caller(app, "POST", "/mcp", INIT % b"2025-06-18",
                       {"Accept": "application/json, text/event-stream"})()
    del init
    slots = server.store.sessions.slots.values()
    stream_id = next(s.session.id for s in slots if s.session.transport == "streamable")
    server.store.sessions.get_session(stream_id).initialized = True
    streamable = wsgi_caller(app, "POST", "/mcp", ECHO, {"Accept": "application/json, text/event-stream",
                                                         "Mcp-Session-Id": stream_id,
                                                         "MCP-Protocol-Version": "2025-06-18"})
    assert b'"hello"' in streamable()[1], streamable()

    stateless = wsgi_caller(app, "POST", "/mcp", STATELESS_ECHO, STATELESS_HEADERS)
    assert b'"resultType":"complete"' in stateless()[1], stateless()

    session = server.store.sessions.get_session(session_id)
    body = parse_body(ECHO)
    message = body.messages[0]

    trivial = Flask("trivial")
    trivial.add_url_rule("/mcp", "mcp", lambda: Response(status=202), methods=["POST"])
    flask_floor = wsgi_caller(trivial, "POST", "/mcp?session_id=x", ECHO, {})
    log = logging.getLogger("mcp.rpc")

    ctx = RequestContext(server.services, session, lambda m: None, 7, "tools/call", {})
    tool = server.registry.tools["echo"]
    tools_call_handler = SESSION_METHODS["tools/call"]

    def publish_and_drain() -> None:
        """Publish one response to the legacy session and take it off its stream."""
        server.store.events.publish(session_id, {"id": 7})
        drain(subscription)

    stages = [
        ("legacy POST, whole (Flask + server + store + SSE frame)", legacy_round_trip),
        ("streamable POST, whole (Flask + server, JSON answer)", streamable),
        ("2026-07-28 POST, whole (server, JSON answer)", stateless),
        ("  bare Flask route answering 202 (floor)", flask_floor),
        ("  parse_body", lambda: parse_body(ECHO)),
        ("  server.handle_request (dispatch + tool + log line)",
         lambda: server.handle_request(session, message, None)),
        ("    jsonrpcserver dispatch (jsonrpc_dispatch)", lambda: jsonrpc_dispatch(SESSION_METHODS, ctx, message)),
        ("      inspect.signature(tools/call handler)", lambda: inspect.signature(tools_call_handler)),
        ("      run_tool(echo)", lambda: run_tool(ctx, tool, {"text": "hello"})),
        ("        schema_errors(echo)", lambda: schema_errors(tool, {"text": "hello"})),
        ("        input_validator.is_valid(echo)", lambda: tool.input_validator.is_valid({"text": "hello"})),
        ("  log_call (log line and metrics)",
         lambda: server.log_call(session, "tools/call", 7, {"result": {}}, 0.001)),
        ("  logger.info disabled-level check", lambda: log.debug("x %s", 1)),
        ("  start_request + join (greenlet)",
         lambda: server.start_request(session, message, lambda m: None).join()),
        ("  store.events.publish + drain + SSE frame", publish_and_drain),
        ("  dumps(response)", lambda: dumps({"jsonrpc": "2.0", "id": 7, "result": {
            "content": [{"type": "text", "text": "hello"}], "isError": False}})),
    ]
    print(f"python {sys.version.split()[0]}, {calls} calls per stage, log level {args.log_level}")
    for name, fn in stages:
        print(f"{per_call_us(fn, calls):8.1f} us  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""bench/peers/wsgi_floor.py: the legacy SSE sessions it holds for --idle, driven as gunicorn would drive the app."""

from __future__ import annotations

import io
import re

import orjson

from bench.peers.wsgi_floor import app

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2024-11-05"}}


def post(session_id: str, message: dict, statuses: list[str]) -> None:
    """POST a legacy message to the session, recording the status."""
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "QUERY_STRING": f"session_id={session_id}",
               "wsgi.input": io.BytesIO(orjson.dumps(message))}
    app(environ, lambda status, headers: statuses.append(status))


def test_a_legacy_stream_sends_its_endpoint_then_the_answers_to_its_sessions_posts_and_ends_the_session():
    statuses: list[str] = []
    frames = iter(app({"REQUEST_METHOD": "GET", "PATH_INFO": "/mcp"}, lambda status, headers: statuses.append(status)))
    endpoint = next(frames)
    found = re.fullmatch(rb"event: endpoint\ndata: /mcp\?session_id=([0-9a-f]{32})\n\n", endpoint)
    assert found is not None and statuses == ["200 OK"]
    session_id = found.group(1).decode()
    post(session_id, INITIALIZE, statuses)
    post(session_id, {"jsonrpc": "2.0", "method": "notifications/initialized"}, statuses)
    assert statuses[1:] == ["202 Accepted", "202 Accepted"]
    event, empty = next(frames), next(frames)
    assert event.startswith(b"event: message\ndata: ") and empty == b""
    assert orjson.loads(event.split(b"data: ", 1)[1])["result"]["protocolVersion"] == "2024-11-05"
    frames.close()  # the client left
    post(session_id, INITIALIZE, statuses)
    assert statuses[-1] == "404 Not Found"

"""Batches over stdio: answered as one JSON array line (JSON-RPC 2.0), and only where the session's version has them."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

from flask_mcp_gevent.transports.stdio import StdioConnection
from tests.support.waiting import wait_until


def serve_lines(server, messages: list[Any]) -> list[Any]:
    """Serve these messages, one line each, over a StdioConnection until EOF; the JSON of every line written.

    As a client does, the lines after initialize wait for its answer.
    """
    writer = io.BytesIO()

    def lines() -> Iterator[bytes]:
        for message in messages:
            yield json.dumps(message).encode() + b"\n"
            if isinstance(message, dict) and message.get("method") == "initialize":
                wait_until(lambda: writer.getvalue().endswith(b"\n"), what="the answer to initialize")

    StdioConnection(server, lines(), writer).serve()
    return [json.loads(line) for line in writer.getvalue().splitlines()]


def opened(version: str) -> list[dict[str, Any]]:
    """initialize at version, then notifications/initialized."""
    return [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def test_a_batch_is_answered_as_one_array_line_with_every_response(server):
    batch = [{"jsonrpc": "2.0", "id": 2, "method": "ping"},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo",
                                                                            "arguments": {"text": "hi"}}},
             {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}},
             {"jsonrpc": "2.0", "id": 4}]
    written = serve_lines(server, [*opened("2025-03-26"), batch])
    assert written[0]["id"] == 1
    (answers,) = written[1:]
    assert isinstance(answers, list)
    assert sorted(json.dumps(answer.get("id")) for answer in answers) == ["2", "3", "4"]
    by_id = {answer.get("id"): answer for answer in answers}
    assert by_id[2]["result"] == {}
    assert by_id[3]["result"]["content"][0]["text"] == "hi"
    assert by_id[4]["error"]["code"] == -32600  # the member that is neither request nor response


def test_a_batch_of_notifications_only_gets_no_line(server):
    batch = [{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "x", "progress": 1}}]
    written = serve_lines(server, [*opened("2025-03-26"), batch])
    assert [message.get("id") for message in written] == [1]


def test_a_batch_on_a_version_without_batches_is_refused_as_on_http(server):
    batch = [{"jsonrpc": "2.0", "id": 2, "method": "ping"}, {"jsonrpc": "2.0", "id": 3, "method": "ping"}]
    written = serve_lines(server, [*opened("2025-06-18"), batch])
    refusal = written[1]
    assert refusal["id"] is None and refusal["error"]["code"] == -32600
    assert "2025-06-18" in refusal["error"]["message"]
    assert len(written) == 2  # neither ping ran

"""What the Redis Sentinel and Cluster e2e tests do over every wire: one call each, and counted legacy calls.

Each helper uses the raw clients (raw_clients.py, stateless_client.py) against a real gunicorn.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import httpx

from tests.e2e.raw_clients import LegacyStream, StreamableSession, call_tool, client
from tests.e2e.stateless_client import post, stateless_request


def tool_text(answer: dict[str, Any]) -> str:
    """The text of a tools/call result's first content block."""
    return answer["result"]["content"][0]["text"]


def every_wire_adds(base_url: str, a: int, b: int) -> list[str]:
    """add(a, b) over legacy HTTP+SSE, Streamable HTTP and one 2026-07-28 stateless POST; the three answers."""
    with client() as http:
        with LegacyStream(http, base_url) as legacy:
            legacy.open()
            over_sse = tool_text(legacy.call(call_tool("add", {"a": a, "b": b})))
        streamable = StreamableSession(http, base_url + "/mcp")
        over_streamable = tool_text(streamable.call(call_tool("add", {"a": a, "b": b})))
        assert streamable.delete().status_code in (200, 204)
        stateless = post(http, base_url + "/mcp", stateless_request("tools/call", {"name": "add",
                                                                               "arguments": {"a": a, "b": b}}))
        assert stateless.status_code == 200, (stateless.status_code, stateless.text)
        over_stateless = tool_text(stateless.json())
    return [over_sse, over_streamable, over_stateless]


class LegacyAnswers(threading.Thread):
    """Reads one legacy session's stream in the background and counts the answer to each request id."""

    def __init__(self, stream: LegacyStream) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.answers: Counter[Any] = Counter()
        self.error: Exception | None = None
        self.start()

    def run(self) -> None:
        """Count answers until the stream ends or stays silent for the raw clients' read timeout."""
        try:
            while True:
                message = self.stream.next_event().json()
                if isinstance(message, dict) and "id" in message and "method" not in message:
                    self.answers[message["id"]] += 1
        except (StopIteration, httpx.HTTPError) as exc:
            self.error = exc

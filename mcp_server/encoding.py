"""JSON and Server-Sent Events framing, in one place so the hot path stays cheap."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["KEEPALIVE_FRAME", "dumps", "dumps_line", "format_sse_event", "loads"]

KEEPALIVE_FRAME = b": ping\n\n"


def dumps(value: Any) -> bytes:
    """Encode a JSON value as compact UTF-8 bytes, in a buffer of exactly that size."""
    # orjson returns its working buffer, which is never shorter than 4 KiB and reserves room for escaping
    # every character; what the hubs keep (replay logs, queues) would cost that much per message.
    return memoryview(orjson.dumps(value)).tobytes()


def dumps_line(value: Any) -> bytes:
    """Encode a JSON value followed by a newline (curl-friendly bodies, stdio lines)."""
    return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)


def loads(data: bytes | str) -> Any:
    """Decode JSON; raises ValueError on malformed input."""
    return orjson.loads(data)


def format_sse_event(data: bytes | str, event: str = "message", event_id: str | None = None) -> bytes:
    """Frame one SSE event; data must not contain newlines (compact JSON never does)."""
    if isinstance(data, str):
        data = data.encode()
    head = b"id: " + event_id.encode() + b"\n" if event_id is not None else b""
    return head + b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"

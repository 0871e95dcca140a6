"""JSON and Server-Sent Events framing, in one place so the hot path stays cheap.

orjson does the work; the standard library's json steps in where orjson is not exact:
integers past 64 bits (which orjson refuses to encode and decodes as rounded floats),
and objects that repeat a key (orjson keeps only the last).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["KEEPALIVE_FRAME", "JsonObject", "dumps", "dumps_line", "format_sse_event", "loads", "loads_exact",
           "utf8_size"]

KEEPALIVE_FRAME = b": ping\n\n"


def utf8_size(text: str) -> int:
    """How many bytes a decoded JSON string takes in UTF-8 (its length when ASCII, which Python knows at once)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def dumps(value: Any) -> bytes:
    """Encode a JSON value as compact UTF-8 bytes, in a buffer of exactly that size."""
    # orjson returns its working buffer, which is never shorter than 4 KiB and reserves room for escaping
    # every character; what the stores keep (replay logs, queues) would cost that much per message.
    try:
        return memoryview(orjson.dumps(value)).tobytes()
    except orjson.JSONEncodeError:
        return dumps_exact(value)


def dumps_line(value: Any) -> bytes:
    """Encode a JSON value followed by a newline (curl-friendly bodies, stdio lines)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return dumps_exact(value) + b"\n"


def dumps_exact(value: Any) -> bytes:
    """Encode what orjson refuses, such as an integer past 64 bits (a tool's big result); TypeError if JSON cannot."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def loads(data: bytes | str) -> Any:
    """Decode JSON; raises ValueError on malformed input."""
    return orjson.loads(data)


class JsonObject(dict):
    """A JSON object decoded by loads_exact, with the keys it held more than once."""

    __slots__ = ("repeated",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.repeated = frozenset() if len(self) == len(pairs) else repeated_keys(pairs)


def repeated_keys(pairs: list[tuple[str, Any]]) -> frozenset[str]:
    """The keys that occur more than once among pairs."""
    seen: set[str] = set()
    repeated: set[str] = set()
    for key, _ in pairs:
        (repeated if key in seen else seen).add(key)
    return frozenset(repeated)


def loads_exact(data: bytes | str) -> Any:
    """Decode JSON slowly but exactly: integers of any size, objects as JsonObject; ValueError or RecursionError."""
    return json.loads(data, object_pairs_hook=JsonObject)


def format_sse_event(data: bytes | str, event: str | None = "message", event_id: str | None = None,
                     retry_ms: int | None = None) -> bytes:
    """Frame one SSE event; data must not contain newlines (compact JSON never does)."""
    if isinstance(data, str):
        data = data.encode()
    head = b"id: " + event_id.encode() + b"\n" if event_id is not None else b""
    if event is not None:
        head += b"event: " + event.encode() + b"\n"
    if retry_ms is not None:
        head += b"retry: " + str(retry_ms).encode() + b"\n"
    return head + b"data: " + data + b"\n\n"

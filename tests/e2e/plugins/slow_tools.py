"""A tool that takes its time, to test calls in flight: concurrency, dropped streams, shutdown."""

import gevent

from mcp_tools import tool

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "ms": {"type": "integer", "minimum": 0, "maximum": 60000, "description": "How long to sleep, in ms."},
        "announce": {
            "type": "boolean",
            "description": "Log a message before sleeping, so a Streamable HTTP answer becomes an SSE stream.",
        },
    },
    "required": ["ms"],
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA)
def sleep_ms(ms: int, ctx, announce: bool = False) -> str:
    """Sleep cooperatively for ms milliseconds, then say so."""
    if announce:
        ctx.log("info", f"sleeping {ms} ms")
    gevent.sleep(ms / 1000.0)
    return f"slept {ms} ms"

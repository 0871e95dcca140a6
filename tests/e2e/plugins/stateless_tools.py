"""A slow tool that reports progress first, to test the 2026-07-28 wire's SSE answers and their cancellation."""

import logging

import gevent

from mcp_tools import tool

log = logging.getLogger("mcp.tests.stateless")

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "ms": {"type": "integer", "minimum": 0, "maximum": 60000, "description": "How long to sleep, in ms."},
    },
    "required": ["ms"],
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA)
def progress_then_sleep(ms: int, ctx) -> str:
    """Report progress, then sleep for ms milliseconds; log it when the call is cancelled meanwhile."""
    ctx.progress(1, 2, "started")
    try:
        gevent.sleep(ms / 1000.0)
    except gevent.GreenletExit:
        log.warning("progress_then_sleep saw GreenletExit")
        raise
    ctx.progress(2, 2, "done")
    return f"slept {ms} ms"

"""A tool that reports progress and logs through `ctx` while it works; on MCP 2026-07-28 it may run as a task."""

import gevent

from mcp_tools import Context, tool

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "steps": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How many steps to count."},
        "delay_ms": {
            "type": "integer",
            "minimum": 0,
            "maximum": 1000,
            "description": "Pause between steps, in milliseconds.",
        },
    },
    "required": ["steps"],
    "additionalProperties": False,
}


# task="optional": a 2026-07-28 request that declares the io.modelcontextprotocol/tasks extension gets a task it
# polls with tasks/get; every other request (and every 2025-era session) runs it at once, as before.
@tool(input_schema=INPUT_SCHEMA, annotations={"readOnlyHint": True}, task="optional")
def count_down(steps: int, ctx: Context, delay_ms: int = 0) -> str:
    """Count down from steps to zero, reporting progress and a log line per step."""
    for done in range(1, steps + 1):
        gevent.sleep(delay_ms / 1000.0)
        ctx.progress(done, total=steps, message=f"{steps - done} to go")
        ctx.log("info", {"step": done, "of": steps}, logger="count_down")
    return f"Counted down from {steps}."

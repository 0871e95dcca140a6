"""A tool that floods its own request stream with large log notifications before its result.

Loaded with MCP_PLUGINS=tests.e2e.plugins.flood_tools.
"""

from __future__ import annotations

import gevent

from mcp_tools import tool


@tool(input_schema={
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "How many notifications."},
        "chars": {"type": "integer", "minimum": 1, "maximum": 1000000, "description": "Characters in each."},
    },
    "required": ["count", "chars"],
    "additionalProperties": False,
})
def log_flood(count: int, chars: int, ctx) -> int:
    """Send count log notifications of chars characters each, letting the stream run between them; return count."""
    text = "x" * chars
    for _ in range(count):
        ctx.log("info", text)
        gevent.sleep(0)  # as a tool that works between notifications: each reaches its stream before the next
    return count

"""A tool the listen tests drive: one resource changing many times in a row, each change its own notification.

Loaded with MCP_PLUGINS=tests.e2e.plugins.listen_tools.
"""

from __future__ import annotations

import gevent

from mcp_tools import tool


@tool(input_schema={
    "type": "object",
    "properties": {
        "uri": {"type": "string", "description": "The resource that changed."},
        "times": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "How many changes to announce."},
    },
    "required": ["uri", "times"],
    "additionalProperties": False,
})
def touch_often(uri: str, times: int, ctx) -> str:
    """Announce that the resource at uri changed, times times, letting the listen streams run between changes."""
    for _ in range(times):
        ctx.resource_updated(uri)
        gevent.sleep(0)  # as changes spread over time: each reaches its stream's transport before the next
    return f"touched {uri} {times} times"

"""A task tool for the tasks' memory tests: a result of a chosen size, after a chosen delay.

Loaded with MCP_PLUGINS=tests.e2e.plugins.task_tools.
"""

import gevent

from mcp_tools import tool

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "kilobytes": {"type": "integer", "minimum": 0, "maximum": 1000, "description": "The result's size, in KiB."},
        "delay_ms": {"type": "integer", "minimum": 0, "maximum": 60000, "description": "How long to wait first."},
        "note": {"type": "string", "description": "Ignored: lets a test send arguments of any size."},
    },
    "required": ["kilobytes"],
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA, task="optional")
def sized_result(kilobytes: int, delay_ms: int = 0, note: str = "") -> str:
    """Wait delay_ms, then return kilobytes KiB of text."""
    gevent.sleep(delay_ms / 1000.0)
    return "x" * (kilobytes * 1024)

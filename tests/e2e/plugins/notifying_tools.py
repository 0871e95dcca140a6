"""A tool that sends log notifications before its result, to put messages on a session's stream."""

from mcp_tools import tool

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "description": "Tag carried by every message, to tell batches apart."},
        "count": {"type": "integer", "minimum": 0, "maximum": 100, "description": "How many messages to send."},
    },
    "required": ["label", "count"],
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA)
def log_messages(label: str, count: int, ctx) -> int:
    """Send count log notifications tagged label-1 .. label-count, then return count."""
    for n in range(1, count + 1):
        ctx.log("info", {"tag": f"{label}-{n}"})
    return count

"""Tell the server's current time: a tool without arguments."""

from datetime import UTC, datetime

from mcp_tools import tool

INPUT_SCHEMA = {
    "type": "object",
    "properties": {},
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA, annotations={"readOnlyHint": True})
def get_time() -> str:
    """Return the server's current UTC time in ISO 8601 format."""
    return datetime.now(UTC).isoformat(timespec="seconds")

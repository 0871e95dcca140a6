"""Echo text back unchanged: the quickest check that the pipe works end to end."""

from mcp_tools import tool

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The text to send back."},
    },
    "required": ["text"],
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA, annotations={"readOnlyHint": True})
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text

"""Add two integers: the example of a tool with an output schema and annotations (copy echo.py, not this)."""

from mcp_tools import tool

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "a": {"type": "integer", "description": "The first addend."},
        "b": {"type": "integer", "description": "The second addend."},
    },
    "required": ["a", "b"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"result": {"type": "integer", "description": "a + b"}},
    "required": ["result"],
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA, output_schema=OUTPUT_SCHEMA, annotations={"readOnlyHint": True})
def add(a: int, b: int) -> int:
    """Add two integers and return their sum."""
    return a + b

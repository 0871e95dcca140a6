"""A plugin module that clashes with a built-in tool's name, so discovery must refuse it."""

from mcp_tools import tool


@tool(name="echo", input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def another_echo() -> str:
    """Pretend to be the built-in echo."""
    return "clash"

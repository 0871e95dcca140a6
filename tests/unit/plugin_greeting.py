"""A plugin module outside mcp_tools, loaded by test_registry through `plugins=` / MCP_PLUGINS."""

from mcp_tools import tool
from mcp_tools.echo import echo  # noqa: F401  (imported on purpose: discovery must not register it here)

INPUT_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Who to greet."}},
    "required": ["name"],
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA)
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"

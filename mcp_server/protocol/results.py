"""Shape what a tool returns into an MCP CallToolResult for the session's version."""

from __future__ import annotations

from typing import Any

from mcp_server.encoding import dumps
from mcp_server.versions import at_least
from mcp_tools import ToolResult

__all__ = ["error_result", "shape_tool_result", "to_text"]

STRUCTURED_SINCE = "2025-06-18"


def to_text(value: Any) -> str:
    """Render a value for a text block: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    return dumps(value).decode()


def structured(value: Any) -> dict[str, Any]:
    """structuredContent must be an object: dicts as they are, anything else wrapped."""
    return value if isinstance(value, dict) else {"result": value}


def shape_tool_result(value: Any, version: str | None) -> dict[str, Any]:
    """Build the result for a tool's return value."""
    if isinstance(value, ToolResult):
        result: dict[str, Any] = {"content": list(value.content), "isError": value.is_error}
        if value.structured is not None and at_least(version, STRUCTURED_SINCE):
            result["structuredContent"] = value.structured
        return result
    result = {"content": [{"type": "text", "text": to_text(value)}], "isError": False}
    if at_least(version, STRUCTURED_SINCE):
        result["structuredContent"] = structured(value)
    return result


def error_result(message: str) -> dict[str, Any]:
    """A tool-level failure the model can read and react to."""
    return {"content": [{"type": "text", "text": message}], "isError": True}

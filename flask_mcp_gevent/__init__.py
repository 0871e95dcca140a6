"""An MCP server on Flask: `from flask_mcp_gevent import MCP`, then `mcp = MCP(app)` (see extension.py).

The names a tool author needs (Context, ToolError, ToolResult, the content blocks, the decorators) come from the
toolkit, which imports neither Flask nor the server; MCP is imported on first use, so a module that takes only
those names never pulls in Flask and the whole server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flask_mcp_gevent.toolkit.checks import RegistryError
from flask_mcp_gevent.toolkit.content import ToolResult, audio, embedded_resource, image, resource_link, text
from flask_mcp_gevent.toolkit.context import (
    Context,
    InputRequest,
    ProtocolError,
    ResourceNotFound,
    ToolError,
)
from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.toolkit.specs import Completion, PromptArgument, prompt, resource, resource_template, tool

if TYPE_CHECKING:
    from flask_mcp_gevent.extension import MCP

__all__ = [
    "MCP",
    "Completion",
    "Context",
    "InputRequest",
    "PromptArgument",
    "ProtocolError",
    "Registry",
    "RegistryError",
    "ResourceNotFound",
    "ToolError",
    "ToolResult",
    "audio",
    "embedded_resource",
    "image",
    "prompt",
    "resource",
    "resource_link",
    "resource_template",
    "text",
    "tool",
]


def __getattr__(name: str) -> Any:
    """Import MCP when it is first asked for."""
    if name == "MCP":
        from flask_mcp_gevent.extension import MCP

        return MCP
    raise AttributeError(f"module 'flask_mcp_gevent' has no attribute {name!r}")

"""The extension point: one file in this folder per tool, resource or prompt.

A module here that decorates a function with `@tool`, `@resource`,
`@resource_template` or `@prompt` is discovered at startup; modules whose names
start with an underscore are not. Nothing here imports Flask or the server.
"""

from mcp_tools._checks import RegistryError
from mcp_tools._content import ToolResult, audio, embedded_resource, image, resource_link, text
from mcp_tools._context import Completion, Context, InputRequest, ProtocolError, ResourceNotFound, ToolError
from mcp_tools._registry import Registry
from mcp_tools._specs import (
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    Tool,
    prompt,
    resource,
    resource_template,
    tool,
)

__all__ = [
    "Completion",
    "Context",
    "InputRequest",
    "Prompt",
    "PromptArgument",
    "ProtocolError",
    "Registry",
    "RegistryError",
    "Resource",
    "ResourceNotFound",
    "ResourceTemplate",
    "Tool",
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

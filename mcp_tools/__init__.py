"""The extension point: one file in this folder per tool, resource or prompt.

A module here that decorates a function with `@tool`, `@resource`,
`@resource_template` or `@prompt` is discovered at startup (`Registry.discover()`);
modules whose names start with an underscore are not. The names a tool file uses
come from the server's toolkit (mcp_server/toolkit/), re-exported here.
"""

from mcp_server.toolkit.checks import RegistryError
from mcp_server.toolkit.content import ToolResult, audio, embedded_resource, image, resource_link, text
from mcp_server.toolkit.context import Completion, Context, InputRequest, ProtocolError, ResourceNotFound, ToolError
from mcp_server.toolkit.registry import Registry
from mcp_server.toolkit.specs import PromptArgument, prompt, resource, resource_template, tool

__all__ = [
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

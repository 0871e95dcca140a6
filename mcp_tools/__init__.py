"""The extension point: one file in this folder per tool, resource or prompt.

A module here that decorates a function with `@tool`, `@resource`,
`@resource_template` or `@prompt` is discovered at startup (`Registry.discover()`);
modules whose names start with an underscore are not. The names a tool file uses
come from the server's toolkit (flask_mcp_gevent/toolkit/), re-exported here.
"""

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

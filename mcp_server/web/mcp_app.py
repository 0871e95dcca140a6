"""What every web module finds on an MCP app: the dispatcher its extension owns, and the MCP routes' blueprint name."""

from __future__ import annotations

from flask import Flask, current_app

from mcp_server.dispatcher import Dispatcher

__all__ = ["MCP_BLUEPRINT", "MCP_EXTENSION", "core_of", "current_core"]

# The McpExtension's key in app.extensions.
MCP_EXTENSION = "mcp"
# The blueprint of the MCP routes: hooks and limits that apply to MCP requests only look for it.
MCP_BLUEPRINT = "mcp"


def core_of(app: Flask) -> Dispatcher:
    """The Dispatcher of an app that has the MCP extension."""
    return app.extensions[MCP_EXTENSION].core


def current_core() -> Dispatcher:
    """The Dispatcher of the app handling this request."""
    return core_of(current_app)

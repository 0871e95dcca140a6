"""What every web module finds on an MCP app: the server its extension owns, and the MCP routes' blueprint name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask, current_app
from werkzeug.exceptions import HTTPException

from flask_mcp_gevent.server import Server

__all__ = ["MCP_BLUEPRINT", "MCP_EXTENSION", "current_server", "server_of", "handle_error_in"]

# The McpExtension's key in app.extensions.
MCP_EXTENSION = "mcp"
# The blueprint of the MCP routes: hooks and limits that apply to MCP requests only look for it.
MCP_BLUEPRINT = "mcp"


def server_of(app: Flask) -> Server:
    """The Server of an app that has the MCP extension."""
    return app.extensions[MCP_EXTENSION].server


def current_server() -> Server:
    """The Server of the app handling this request."""
    return server_of(current_app)


def handle_error_in(app: Flask, blueprint: str, failure: type[Exception], handler: Callable[..., Any]) -> None:
    """Register an error handler for one blueprint's requests on app (a blueprint object may serve several apps).

    An HTTP error with a status (429) is filed under it, as Flask's register_error_handler does: Flask looks up
    handlers by status before handlers by class, so a host's errorhandler(429) would otherwise answer MCP's pages.
    """
    code = failure.code if issubclass(failure, HTTPException) else None
    app.error_handler_spec[blueprint][code][failure] = handler

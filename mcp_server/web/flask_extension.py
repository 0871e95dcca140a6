"""The Flask extension: `McpExtension(app)` wires the dispatcher, the routes and the error pages."""

from __future__ import annotations

from typing import Any

from flask import Flask

from mcp_server.auth import Authenticator
from mcp_server.config import Settings
from mcp_server.dispatcher import Dispatcher
from mcp_server.web import console, flask_hooks, health, routes, security
from mcp_server.web.cli import mcp_cli
from mcp_server.web.mcp_app import MCP_EXTENSION
from mcp_server.web.pipeline import ConnectionLimit, HotPath, Pipeline

__all__ = ["McpExtension"]


class McpExtension:
    """Owns one Dispatcher per app and answers every error as JSON, never as HTML."""

    def __init__(self, app: Flask | None = None, settings: Settings | None = None,
                 dispatcher: Dispatcher | None = None) -> None:
        self.settings = settings
        self.dispatcher = dispatcher
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Build the dispatcher from the app's settings and register routes and handlers."""
        settings = self.settings or app.config["MCP_SETTINGS"]
        authenticator = Authenticator.from_settings(settings)
        self.dispatcher = self.dispatcher or Dispatcher(
            settings, authorizer=authenticator.authorizer if authenticator is not None else None)
        app.extensions[MCP_EXTENSION] = self
        app.cli.add_command(mcp_cli)
        app.register_blueprint(routes.blueprint)
        app.register_blueprint(health.blueprint)
        console.init_app(app, settings)
        # Before security.init_app, so the screen runs before the rate limiter counts the request.
        flask_hooks.install(app, Pipeline(app))
        security.init_app(app, self.dispatcher, authenticator)
        app.wsgi_app = HotPath(app, flask_hooks.pipeline_of(app), app.wsgi_app)  # type: ignore[method-assign]
        # Outermost, so a refusal costs neither Flask nor the hot path anything.
        app.wsgi_app = ConnectionLimit(app.wsgi_app, settings.max_connections_per_address)  # type: ignore[method-assign]

    def shutdown(self) -> None:
        """Close every stream promptly (called from gunicorn on SIGTERM)."""
        if self.dispatcher is not None:
            self.dispatcher.shutdown()

    def drain(self) -> None:
        """Give calls in flight a bounded time to finish (called from gunicorn as the worker exits)."""
        if self.dispatcher is not None:
            self.dispatcher.drain()


def settings_of(config: Any) -> Settings:
    """Turn create_app's config argument into Settings."""
    if isinstance(config, Settings):
        return config
    if config is None:
        return Settings.from_environ()
    return Settings.from_mapping(config)

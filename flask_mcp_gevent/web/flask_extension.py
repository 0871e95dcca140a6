"""One app's MCP server: `McpExtension(app)` wires the dispatcher, the routes and the error pages.

The public face is flask_mcp_gevent.extension.MCP, which builds one of these per app it is given. The template's
app is all MCP (whole_app): the console at `/`, the operations endpoints at `/healthz`, every error as
JSON, the WSGI hot path. A host app keeps its own pages: everything MCP serves lives under `path`
(`/mcp`, `/mcp/sse`, `/mcp/messages`, `/mcp/console`, `/mcp/healthz`, `/mcp/readyz`, `/mcp/metrics`), and
only those requests get MCP's error bodies and headers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flask import Flask, request

from flask_mcp_gevent.auth import Authenticator, Authorizer
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.dispatcher import Dispatcher
from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.web import console, flask_hooks, health, routes, security
from flask_mcp_gevent.web.callers import CallerCredentials, load_principal
from flask_mcp_gevent.web.cli import mcp_cli
from flask_mcp_gevent.web.mcp_app import MCP_BLUEPRINT, MCP_EXTENSION
from flask_mcp_gevent.web.oauth_metadata import metadata_blueprint
from flask_mcp_gevent.web.pipeline import ConnectionLimit, HotPath, Pipeline, authenticate

__all__ = ["HOST_BLUEPRINTS", "McpExtension", "settings_of"]

# The blueprints of MCP's own pages on a host app (named so as not to meet a host's own "ops" or "console").
HOST_OPS, HOST_CONSOLE = "mcp_ops", "mcp_console"
HOST_BLUEPRINTS = (MCP_BLUEPRINT, HOST_OPS, HOST_CONSOLE, metadata_blueprint.name)


class McpExtension:
    """Owns one Dispatcher per app and answers every MCP error as JSON, never as HTML."""

    def __init__(self, app: Flask | None = None, settings: Settings | None = None,
                 dispatcher: Dispatcher | None = None, registry: Registry | None = None, path: str = "/mcp",
                 whole_app: bool = True) -> None:
        self.settings = settings
        self.dispatcher = dispatcher
        self.registry = registry
        self.path = path
        self.whole_app = whole_app
        self.authenticator: Authenticator | None = None
        self.app: Flask | None = None
        self.limiter: Any = None  # MCP_RATE_LIMIT's flask_limiter.Limiter (web/rate_limit.py); None when unset
        # A host's principal_loader (flask_mcp_gevent.extension.MCP): who the caller is, in place of the bearer check.
        self.loader: Callable[[Any], Any] | None = None
        # The credentials each principal's requests carried, kept once a route is a tool (web/route_tools.py).
        # Until a loader or a route tool needs it, identify stays off the pipeline: the bearer check is the screen.
        self.credentials: CallerCredentials  # bounded by the app's settings, so made in init_app
        self.forwards_credentials = False
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Build the dispatcher from the app's settings and register routes and handlers."""
        self.app = app
        settings = self.settings = self.settings or app.config["MCP_SETTINGS"]
        self.credentials = CallerCredentials(settings.caller_credentials_max, settings.caller_credentials_max_bytes)
        authenticator = self.authenticator = Authenticator.from_settings(settings)
        self.dispatcher = self.dispatcher or Dispatcher(
            settings, registry=self.registry, authorizer=authenticator.authorizer if authenticator else None)
        app.extensions[MCP_EXTENSION] = self
        app.cli.add_command(mcp_cli)
        if self.whole_app:
            app.register_blueprint(routes.mcp_blueprint(self.path))
            app.register_blueprint(health.ops_blueprint())
            console.init_app(app, settings, console.console_blueprint(endpoint=self.path))
        else:
            app.register_blueprint(routes.mcp_blueprint(self.path, aliases_under=self.path))
            app.register_blueprint(health.ops_blueprint(self.path, name=HOST_OPS))
            console.init_app(app, settings, console.console_blueprint(
                pages=(f"{self.path}/console",), console_path=f"{self.path}/console", endpoint=self.path,
                metrics_path=f"{self.path}/metrics", name=HOST_CONSOLE))
        scope = None if self.whole_app else HOST_BLUEPRINTS
        # Before security.init_app, so the screen runs before the rate limiter counts the request.
        flask_hooks.install(app, Pipeline(app), scope)
        security.init_app(app, self.dispatcher, authenticator, scope)
        if self.whole_app:
            app.wsgi_app = HotPath(app, flask_hooks.pipeline_of(app), app.wsgi_app)  # type: ignore[method-assign]
        # Outermost, so a refusal costs neither Flask nor the hot path anything; on a host, for MCP's paths only.
        app.wsgi_app = ConnectionLimit(  # type: ignore[method-assign]
            app.wsgi_app, settings.max_connections_per_address, None if self.whole_app else self.path)

    def identify(self, environ: Mapping[str, Any]) -> str | None:
        """Who sent this MCP request: the loader's principal, else the bearer check's (None: authentication off)."""
        assert self.settings is not None and self.dispatcher is not None
        if self.loader is not None and self.dispatcher.authorizer is not None:
            caller = request._get_current_object()  # type: ignore[attr-defined]
            principal: str | None = load_principal(self.loader, caller, self.settings, self.dispatcher.authorizer)
        else:
            principal = authenticate(self.authenticator, self.settings, environ)
        if self.forwards_credentials:
            self.credentials.remember(principal, environ)
        return principal

    def use_loader(self, loader: Callable[[Any], Any]) -> None:
        """Ask loader(request) who each HTTP caller is (stdio has no request: its principal stays the local one)."""
        assert self.app is not None and self.dispatcher is not None, "init_app first"
        self.loader = loader
        if self.dispatcher.authorizer is None:  # authentication was off: the loader's grants now decide
            self.dispatcher.use_authorizer(Authorizer())
        screen = flask_hooks.pipeline_of(self.app)
        screen.identify = self.identify
        # The loader reads Flask's request, which the WSGI hot path does not build.
        screen.needs_flask_request = True

    def forward_credentials(self) -> None:
        """Keep each principal's credentials from now on, for the routes made tools to call the host with."""
        assert self.app is not None, "init_app first"
        self.forwards_credentials = True
        flask_hooks.pipeline_of(self.app).identify = self.identify

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

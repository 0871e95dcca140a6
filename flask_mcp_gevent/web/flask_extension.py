"""One app's MCP server: `McpExtension` wires the server, the pipeline, the routes and the error pages.

The public face is flask_mcp_gevent.extension.MCP, which builds one of these per app it is given and keeps it in
`app.extensions["mcp"]`, the only key MCP sets. The template's app is all MCP (whole_app): the console at `/`, the
operations endpoints at `/healthz`, every error as JSON, the WSGI hot path. A host app keeps its own pages:
everything MCP serves lives under `path` (`/mcp`, `/mcp/sse`, `/mcp/messages`, `/mcp/console`, `/mcp/healthz`,
`/mcp/readyz`, `/mcp/metrics`), and only those requests get MCP's error bodies and headers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask
from werkzeug.routing import Rule

from flask_mcp_gevent.auth import Authenticator
from flask_mcp_gevent.config import ConfigError, Settings
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.web import console, flask_hooks, health, routes, security
from flask_mcp_gevent.web.app_context import app_runner
from flask_mcp_gevent.web.callers import credential_keys
from flask_mcp_gevent.web.mcp_app import MCP_BLUEPRINT, MCP_EXTENSION
from flask_mcp_gevent.web.oauth_metadata import metadata_blueprint
from flask_mcp_gevent.web.pipeline import ConnectionLimit, HotPath, MethodGate, Pipeline, served_methods

__all__ = ["HOST_BLUEPRINTS", "McpExtension", "settings_of"]

log = logging.getLogger("mcp.http")

# The blueprints of MCP's own pages on a host app (named so as not to meet a host's own "ops" or "console").
HOST_OPS, HOST_CONSOLE = "mcp_ops", "mcp_console"
HOST_BLUEPRINTS = (MCP_BLUEPRINT, HOST_OPS, HOST_CONSOLE, metadata_blueprint.name)
# Every blueprint MCP may register, on the template's app or a host's.
OUR_BLUEPRINTS = frozenset({*HOST_BLUEPRINTS, "ops", "console"})
# Flask-WTF's CSRFProtect keeps itself here (CSRFProtect.init_app).
CSRF_EXTENSION = "csrf"


class McpExtension:
    """Owns one Server and one Pipeline per app and answers every MCP error as JSON, never as HTML."""

    def __init__(self, settings: Settings, registry: Registry | None = None, path: str = "/mcp",
                 whole_app: bool = True, forward_headers: Iterable[str] = ()) -> None:
        self.settings = settings
        self.registry = registry
        self.path = path
        self.whole_app = whole_app
        self.forwarded = credential_keys(forward_headers)
        self.app: Flask | None = None
        self.server: Server | None = None
        self.pipeline: Pipeline | None = None
        self.authenticator: Authenticator | None = None
        # The MCP_RATE_LIMIT limiter, when one is set (web/rate_limit.py).
        self.limiter: Any = None
        # The paths MCP serves on this app: a route of the host's at one of them stops the start.
        self.paths: frozenset[str] = frozenset()
        # The names of the host's routes made tools (MCP.expose_route).
        self.route_tools: list[str] = []
        self.started = False

    def init_app(self, app: Flask) -> None:
        """Build the server and the pipeline from the settings; register routes and handlers."""
        if MCP_EXTENSION in app.extensions:
            raise ConfigError(f"MCP is already on app {app.name!r} (app.extensions['mcp']): give each app one MCP "
                              "object, and declare every tool, resource and prompt on it")
        self.app = app
        settings = self.settings
        self.authenticator = Authenticator.from_settings(settings)
        self.pipeline = Pipeline(settings, self.authenticator)
        self.pipeline.forwarded = self.forwarded
        self.server = Server(settings, registry=self.registry, run_in_app=app_runner(app))
        app.extensions[MCP_EXTENSION] = self
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
        flask_hooks.install(app, scope)
        security.init_app(app, self.server, scope)
        self.paths = guard_paths(app)
        if self.whole_app:
            app.wsgi_app = HotPath(app, self.pipeline, app.wsgi_app, self.start)  # type: ignore[method-assign]
        app.wsgi_app = MethodGate(app.wsgi_app, served_methods(app, MCP_BLUEPRINT))  # type: ignore[method-assign]
        # Outermost, so a refusal costs neither Flask nor the hot path anything; on a host, for MCP's paths only.
        app.wsgi_app = ConnectionLimit(  # type: ignore[method-assign]
            app.wsgi_app, settings.max_connections_per_address, None if self.whole_app else self.path)

    def start(self) -> None:
        """Once, when the app is set up (its first request, or a gunicorn worker's start): exempt MCP from CSRF
        checks, and warn of routes made tools that no principal_loader lets carry the caller's credentials."""
        if self.started or self.app is None:
            return
        self.started = True
        exempt_from_csrf(self.app)
        self.warn_of_anonymous_routes(self.route_tools)

    def add_route_tool(self, name: str) -> None:
        """Count a route made a tool; one added after the start is warned of then, as the others were at it."""
        self.route_tools.append(name)
        if self.started:
            self.warn_of_anonymous_routes([name])

    def warn_of_anonymous_routes(self, names: list[str]) -> None:
        """Warn that these routes made tools reach the app as an anonymous caller, when there is no loader."""
        if names and self.pipeline is not None and self.pipeline.loader is None:
            log.warning("routes made tools reach the app as an anonymous caller: there is no @mcp.principal_loader, "
                        "so no caller's credentials are passed on to them: %s", ", ".join(sorted(names)))

    def use_loader(self, loader: Callable[[Any], Any]) -> None:
        """Ask loader(request) who each HTTP caller is (stdio and the CLI have no request: the local user)."""
        assert self.pipeline is not None, "init_app first"
        self.pipeline.loader = loader

    def shutdown(self) -> None:
        """Close every stream promptly (called from gunicorn on SIGTERM)."""
        if self.server is not None:
            self.server.shutdown()

    def drain(self) -> None:
        """Give calls in flight a bounded time to finish (called from gunicorn as the worker exits)."""
        if self.server is not None:
            self.server.drain()


def blueprint_of(endpoint: str) -> str:
    """The blueprint name an endpoint belongs to ("" for the app's own)."""
    return endpoint.rpartition(".")[0]


def guard_paths(app: Flask) -> frozenset[str]:
    """MCP's paths on app; stop the start at a route of the app's there, now or whenever one is added later."""
    paths = frozenset(rule.rule for rule in app.url_map.iter_rules() if blueprint_of(rule.endpoint) in OUR_BLUEPRINTS)
    for rule in app.url_map.iter_rules():
        if rule.rule in paths and blueprint_of(rule.endpoint) not in OUR_BLUEPRINTS:
            raise ConfigError(taken_message(rule.rule, rule.endpoint))
    add = app.url_map.add

    def add_unless_taken(rulefactory: Any) -> None:
        """Map.add, refusing a rule at one of MCP's paths."""
        if isinstance(rulefactory, Rule) and rulefactory.rule in paths and (
                blueprint_of(rulefactory.endpoint or "") not in OUR_BLUEPRINTS):
            raise ConfigError(taken_message(rulefactory.rule, rulefactory.endpoint or "?"))
        add(rulefactory)

    # Flask has no hook for a route added after MCP's: without this one, it would silently shadow MCP's or be
    # shadowed, whichever the router prefers.
    app.url_map.add = add_unless_taken  # type: ignore[method-assign]
    return paths


def exempt_from_csrf(app: Flask) -> None:
    """Exempt MCP's blueprints from Flask-WTF's CSRFProtect, if the app has one.

    MCP's POSTs are JSON only (a form cannot send that across sites without a preflight) and their Origin is
    checked: what a CSRF token protects a form post from.
    """
    csrf = app.extensions.get(CSRF_EXTENSION)
    if csrf is None or not callable(getattr(csrf, "exempt", None)):
        return
    for name in OUR_BLUEPRINTS:
        blueprint = app.blueprints.get(name)
        if blueprint is not None:
            csrf.exempt(blueprint)


def taken_message(path: str, endpoint: str) -> str:
    """What to say of a route of the app's at one of MCP's paths."""
    return (f"MCP serves {path}, but the app's route {endpoint!r} is there too: one of them would never be "
            "reached. Move that route, or serve MCP elsewhere with MCP(app, path='/another')")


def settings_of(config: Any) -> Settings:
    """Turn create_app's config argument into Settings."""
    if isinstance(config, Settings):
        return config
    if config is None:
        return Settings.from_environ()
    return Settings.from_mapping(config)

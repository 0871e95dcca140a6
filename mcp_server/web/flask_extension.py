"""The Flask extension: `McpExtension(app)` wires the core, the routes and the error pages."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException

from mcp_server.auth import Authenticator
from mcp_server.config import Settings
from mcp_server.dispatcher import Dispatcher
from mcp_server.errors import INVALID_REQUEST
from mcp_server.transports.http_errors import log_refusal, unexpected_error_response
from mcp_server.transports.http_responses import HttpProblem, json_response, problem_response
from mcp_server.web import console, health, routes, security
from mcp_server.web.connection_limit import ConnectionLimit
from mcp_server.web.hot_path import HotPath

__all__ = ["McpExtension"]

log = logging.getLogger("mcp.http")


class McpExtension:
    """Owns one Dispatcher per app and answers every error as JSON, never as HTML."""

    def __init__(self, app: Flask | None = None, settings: Settings | None = None,
                 core: Dispatcher | None = None) -> None:
        self.settings = settings
        self.core = core
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Build the core from the app's settings and register routes and handlers."""
        settings = self.settings or app.config["MCP_SETTINGS"]
        authenticator = Authenticator.from_settings(settings)
        self.core = self.core or Dispatcher(
            settings, authorizer=authenticator.authorizer if authenticator is not None else None)
        app.extensions["mcp"] = self
        app.register_blueprint(routes.blueprint)
        app.register_blueprint(health.blueprint)
        console.init_app(app, settings)
        app.register_error_handler(HttpProblem, self.render_problem)
        app.register_error_handler(HTTPException, self.render_http_exception)
        app.register_error_handler(Exception, self.render_unexpected)
        app.after_request(self.log_http_error)
        security.init_app(app, self.core, authenticator)
        app.wsgi_app = HotPath(app, app.wsgi_app)  # type: ignore[method-assign]
        # Outermost, so a refusal costs neither Flask nor the hot path anything.
        app.wsgi_app = ConnectionLimit(app.wsgi_app, settings.max_connections_per_address)  # type: ignore[method-assign]

    @staticmethod
    def render_problem(problem: HttpProblem) -> Response:
        """An HTTP-level refusal with its JSON-RPC error body."""
        return problem_response(problem)

    @staticmethod
    def render_http_exception(exc: HTTPException) -> Response:
        """Werkzeug's errors (404, 405, ...) as JSON instead of HTML."""
        hints = {
            404: "Not found: the MCP endpoint is /mcp (or /sse and /messages)",
            405: f"Method {request.method} is not allowed here; /mcp takes GET, POST and DELETE",
        }
        message = hints.get(exc.code or 500, exc.name)
        response = json_response(
            {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}, exc.code or 500
        )
        if exc.code == 405:
            response.headers.update({name: value for name, value in exc.get_headers() if name.lower() == "allow"})
        return response

    @staticmethod
    def render_unexpected(exc: Exception) -> Response:
        """A bug: log it with a correlation id and tell the client only the id."""
        return unexpected_error_response(request.environ)

    @staticmethod
    def log_http_error(response: Response) -> Response:
        """Log HTTP-level refusals (JSON-RPC requests log their own line)."""
        log_refusal(request.environ, response.status_code)
        return response

    def shutdown(self) -> None:
        """Close every stream promptly (called from gunicorn on SIGTERM)."""
        if self.core is not None:
            self.core.shutdown()

    def drain(self) -> None:
        """Give calls in flight a bounded time to finish (called from gunicorn as the worker exits)."""
        if self.core is not None:
            self.core.drain()


def settings_of(config: Any) -> Settings:
    """Turn create_app's config argument into Settings."""
    if isinstance(config, Settings):
        return config
    if config is None:
        return Settings.from_environ()
    return Settings.from_mapping(config)

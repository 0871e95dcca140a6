"""The hot path: POSTs to /mcp and /messages answered straight from WSGI, without Flask's per-request work.

A `tools/call` costs about 100 µs of MCP work; Flask's contexts, URL matching and
hooks around it cost several times that. POSTs run exactly the checks the Flask
route runs (security.screen_environ, posts.handle_post, the security headers and
the refusal log line), so the two ways in answer alike. When a setting needs
Flask's own hooks (a rate limit, CORS), and for every other request, Flask serves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flask import Flask

from mcp_server.hub import HubUnavailable
from mcp_server.transports.http_errors import log_refusal, unexpected_error_response
from mcp_server.transports.http_io import LEGACY_ONLY_PATHS, handle_post, store_unavailable
from mcp_server.transports.http_responses import HttpProblem, problem_response
from mcp_server.web.security import AUTH_EXTENSION_KEY, add_security_headers, screen_environ

__all__ = ["HOT_PATHS", "HotPath"]

HOT_PATHS = frozenset({"/mcp", *LEGACY_ONLY_PATHS})


class HotPath:
    """WSGI middleware in front of Flask's wsgi_app for POSTs to the MCP endpoints."""

    def __init__(self, app: Flask, flask_wsgi: Callable[..., Iterable[bytes]]) -> None:
        self.flask_wsgi = flask_wsgi
        self.core = app.extensions["mcp"].core
        self.authenticator = app.extensions.get(AUTH_EXTENSION_KEY)
        settings = self.core.settings
        # flask-limiter and the CORS headers are Flask hooks: with either configured, Flask serves every request.
        self.enabled = not settings.rate_limit and not settings.cors_origins

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Answer a hot POST here; hand anything else to Flask."""
        if not self.enabled or environ.get("REQUEST_METHOD") != "POST" or environ.get("PATH_INFO") not in HOT_PATHS:
            return self.flask_wsgi(environ, start_response)
        response = self.answer(environ)
        add_security_headers(response)
        if response.status_code >= 400:
            log_refusal(environ, response.status_code)
        return response(environ, start_response)

    def answer(self, environ: Mapping[str, Any]) -> Any:
        """The response to one POST; refusals and failures become their JSON-RPC error bodies."""
        try:
            principal = screen_environ(environ, self.core.settings, self.authenticator)
            return handle_post(self.core, environ, principal)
        except HttpProblem as problem:
            return problem_response(problem)
        except HubUnavailable:
            return problem_response(store_unavailable())
        except Exception:
            return unexpected_error_response(environ)

"""The hot path: POSTs to /mcp and /messages answered straight from WSGI, without Flask's per-request work.

A `tools/call` costs about 100 µs of MCP work; Flask's contexts, URL matching and
hooks around it cost several times that. POSTs pass the same three steps the
Flask hooks are adapters of (pipeline.py: screen, render a failure, finish) around
the same routes.handle_post, so the two ways in answer alike. When a setting needs
Flask's own hooks (a rate limit, CORS), and for every other request, Flask serves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flask import Flask, Response

from mcp_server.web.mcp_app import core_of
from mcp_server.web.pipeline import Pipeline
from mcp_server.web.routes import LEGACY_ONLY_PATHS, handle_post

__all__ = ["HOT_PATHS", "HotPath", "emit"]

HOT_PATHS = frozenset({"/mcp", *LEGACY_ONLY_PATHS})
# What werkzeug's get_wsgi_headers would change: these go its way (1xx, 204, 304, Location, Content-Location).
BODILESS_STATUSES = frozenset({*range(100, 200), 204, 304})
REWRITTEN_HEADERS = frozenset({"location", "content-location"})


class HotPath:
    """WSGI middleware in front of Flask's wsgi_app for POSTs to the MCP endpoints."""

    def __init__(self, app: Flask, pipeline: Pipeline, flask_wsgi: Callable[..., Iterable[bytes]]) -> None:
        self.flask_wsgi = flask_wsgi
        self.pipeline = pipeline
        self.core = core_of(app)
        settings = self.core.settings
        # flask-limiter and the CORS headers are Flask hooks: with either configured, Flask serves every request.
        self.enabled = not settings.rate_limit and not settings.cors_origins

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Answer a hot POST here; hand anything else to Flask."""
        if not self.enabled or environ.get("REQUEST_METHOD") != "POST" or environ.get("PATH_INFO") not in HOT_PATHS:
            return self.flask_wsgi(environ, start_response)
        response = self.pipeline.finish(environ, self.answer(environ))
        return emit(response, environ, start_response)

    def answer(self, environ: Mapping[str, Any]) -> Response:
        """The response to one POST; refusals and failures become their JSON-RPC error bodies."""
        try:
            principal = self.pipeline.screen(environ)
            return handle_post(self.core, environ, principal)
        except Exception as exc:
            return self.pipeline.render_failure(exc, environ)


def emit(response: Response, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Start a response; a buffered body with its length set goes out as it is, without werkzeug's fixes.

    werkzeug copies the headers and looks for Location, Content-Length and statuses without a body on
    every response; the JSON answers of a POST need none of that, and they are most of the traffic.
    """
    body = response.response
    if type(body) is list and not response._on_close and response.status_code not in BODILESS_STATUSES:
        headers = response.headers.to_wsgi_list()
        names = {name.lower() for name, _ in headers}
        if "content-length" in names and not names & REWRITTEN_HEADERS:
            start_response(response.status, headers)
            return body
    return response(environ, start_response)

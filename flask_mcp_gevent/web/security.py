"""The HTTP side of security, installed on the app: the OAuth metadata, the rate limit, CORS and the headers.

The pieces live beside it: web/pipeline.py (the screen: Origin, Host, credentials; it runs the
screen and the headers for both ways in), web/response_headers.py (security and CORS headers)
and web/oauth_metadata.py (RFC 9728).
"""

from __future__ import annotations

from flask import Flask

from flask_mcp_gevent.server import Server
from flask_mcp_gevent.web.oauth_metadata import metadata_blueprint
from flask_mcp_gevent.web.response_headers import add_cors_headers

__all__ = ["init_app"]


def init_app(app: Flask, server: Server, scope: tuple[str, ...] | None = None) -> None:
    """Install the OAuth metadata, the rate limit, CORS and the security headers on app (the order matters).

    scope names the blueprints whose answers get CORS headers and rate-limit errors (None: the whole app).
    """
    settings = server.settings
    if settings.oauth_jwks_url:
        app.register_blueprint(metadata_blueprint)
    if settings.rate_limit:
        # flask-limiter is the ratelimit extra, which Settings.check() made sure of: imported only when a limit is set.
        from flask_mcp_gevent.web.rate_limit import init_rate_limit

        # The pipeline's screen is registered before this, and so before the limiter's own hook: the limit counts
        # per authenticated principal.
        init_rate_limit(app, settings, scope)
    # Only with CORS on (which turns the hot path off), so the hot path knows every hook a default app runs.
    if settings.cors_origins:
        if scope is None:
            app.after_request(add_cors_headers)
        for blueprint in scope or ():
            app.after_request_funcs.setdefault(blueprint, []).append(add_cors_headers)

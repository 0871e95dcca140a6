"""The browser console at `/` and `/console`: static HTML, CSS and JavaScript that speak MCP to `/mcp`.

On a host app (flask_mcp_gevent.extension.MCP) it lives at `<path>/console` and speaks to `<path>` instead.

The page holds no privilege: every call it makes is an ordinary MCP request with the
user's own credentials. Its routes send their own Content-Security-Policy (scripts,
styles and fetches from this origin only); `MCP_CONSOLE=0` leaves them unregistered.
"""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path

from flask import Blueprint, Flask, Response, request, send_from_directory

from flask_mcp_gevent.stateless.metadata import supported_versions
from flask_mcp_gevent.web.mcp_app import current_server
from flask_mcp_gevent.web.pipeline import check_host

__all__ = ["CONSOLE_CSP", "console_blueprint", "init_app"]

STATIC_DIR = Path(__file__).with_name("console_static")
INDEX = "index.html"
VERSIONS_PLACEHOLDER = "{{protocol_versions}}"
# Where the page finds its files, the MCP endpoint and /metrics: the mount decides them.
CONSOLE_PLACEHOLDER = "{{console_path}}"
ENDPOINT_PLACEHOLDER = "{{endpoint}}"
METRICS_PLACEHOLDER = "{{metrics_path}}"
# No inline script or style, no eval, nothing from another origin; images and audio a tool returns are data: URLs.
CONSOLE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src data:; media-src data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)

def screen_console_request() -> None:
    """Refuse a Host that does not name this server (DNS rebinding), as the MCP routes do."""
    check_host(request.environ, current_server().settings)


def index(console_path: str, endpoint: str, metrics_path: str) -> Response:
    """The console page, naming the protocol versions this server speaks and where its endpoints are."""
    html = (STATIC_DIR / INDEX).read_text(encoding="utf-8")
    html = html.replace(VERSIONS_PLACEHOLDER, " ".join(supported_versions(current_server().settings.session_era)))
    html = html.replace(CONSOLE_PLACEHOLDER, console_path).replace(ENDPOINT_PLACEHOLDER, endpoint)
    return Response(html.replace(METRICS_PLACEHOLDER, metrics_path), content_type="text/html; charset=utf-8")


def static_file(filename: str) -> Response:
    """One of the console's scripts or style sheets."""
    return send_from_directory(STATIC_DIR, filename, max_age=0)


def add_console_csp(response: Response) -> Response:
    """Let the page load its own scripts and styles; the other security headers come from response_headers.py."""
    if response.status_code == HTTPStatus.OK:  # errors keep the API's stricter policy
        response.headers["Content-Security-Policy"] = CONSOLE_CSP
    return response


def console_blueprint(pages: tuple[str, ...] = ("/", "/console"), console_path: str = "/console",
                      endpoint: str = "/mcp", metrics_path: str = "/metrics", name: str = "console") -> Blueprint:
    """The console: its page at each of pages, its files under console_path, speaking MCP to endpoint."""
    blueprint = Blueprint(name, __name__)
    blueprint.before_request(screen_console_request)

    def page() -> Response:
        """The console page of this mount."""
        return index(console_path, endpoint, metrics_path)

    # A view of its own, not URL defaults: werkzeug redirects between rules of one endpoint that share defaults.
    for path in pages:
        blueprint.add_url_rule(path, endpoint="index", view_func=page, methods=["GET"])
    blueprint.add_url_rule(f"{console_path}/<path:filename>", view_func=static_file, methods=["GET"])
    blueprint.after_request(add_console_csp)
    return blueprint


def init_app(app: Flask, settings, blueprint: Blueprint | None = None) -> None:
    """Serve the console unless MCP_CONSOLE=0 (the template's blueprint unless another is given)."""
    if settings.console:
        app.register_blueprint(blueprint or console_blueprint())

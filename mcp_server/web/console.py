"""The browser console at `/` and `/console`: static HTML, CSS and JavaScript that speak MCP to `/mcp`.

The page holds no privilege: every call it makes is an ordinary MCP request with the
user's own credentials. Its routes send their own Content-Security-Policy (scripts,
styles and fetches from this origin only); `MCP_CONSOLE=0` leaves them unregistered.
"""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path

from flask import Blueprint, Flask, Response, request, send_from_directory

from mcp_server.stateless.metadata import supported_versions
from mcp_server.web.mcp_app import current_dispatcher
from mcp_server.web.pipeline import check_host

__all__ = ["CONSOLE_CSP", "blueprint", "init_app"]

STATIC_DIR = Path(__file__).with_name("console_static")
INDEX = "index.html"
VERSIONS_PLACEHOLDER = "{{protocol_versions}}"
# No inline script or style, no eval, nothing from another origin; images and audio a tool returns are data: URLs.
CONSOLE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' data:; media-src 'self' data:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"
)

blueprint = Blueprint("console", __name__)


@blueprint.before_request
def screen_console_request() -> None:
    """Refuse a Host that does not name this server (DNS rebinding), as the MCP routes do."""
    check_host(request.environ, current_dispatcher().settings)


@blueprint.route("/", methods=["GET"])
@blueprint.route("/console", methods=["GET"])
def index() -> Response:
    """The console page, naming the protocol versions this server speaks."""
    html = (STATIC_DIR / INDEX).read_text(encoding="utf-8")
    html = html.replace(VERSIONS_PLACEHOLDER, " ".join(supported_versions(current_dispatcher().settings.legacy)))
    return Response(html, content_type="text/html; charset=utf-8")


@blueprint.route("/console/<path:filename>", methods=["GET"])
def static_file(filename: str) -> Response:
    """One of the console's scripts or style sheets."""
    return send_from_directory(STATIC_DIR, filename, max_age=0)


@blueprint.after_request
def add_console_csp(response: Response) -> Response:
    """Let the page load its own scripts and styles; the other security headers come from response_headers.py."""
    if response.status_code == HTTPStatus.OK:  # errors keep the API's stricter policy
        response.headers["Content-Security-Policy"] = CONSOLE_CSP
    return response


def init_app(app: Flask, settings) -> None:
    """Serve the console unless MCP_CONSOLE=0."""
    if settings.console:
        app.register_blueprint(blueprint)

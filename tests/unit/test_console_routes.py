"""The console's routes: served with their own CSP by default, the JSON 404 with MCP_CONSOLE=0."""

from __future__ import annotations

import pytest

from app import create_app
from flask_mcp_gevent.web.console import CONSOLE_CSP, STATIC_DIR
from flask_mcp_gevent.web.response_headers import SECURITY_HEADERS

CONSOLE_PATHS = ("/", "/console")


@pytest.mark.parametrize("path", CONSOLE_PATHS)
def test_the_console_is_a_json_404_when_turned_off(path):
    response = create_app({"MCP_CONSOLE": "0"}).test_client().get(path)
    assert response.status_code == 404
    assert response.is_json and response.get_json()["error"]["code"] == -32600
    assert response.headers["Content-Security-Policy"] == SECURITY_HEADERS["Content-Security-Policy"]


def test_the_console_scripts_are_gone_when_turned_off():
    assert create_app({"MCP_CONSOLE": "0"}).test_client().get("/console/app.js").status_code == 404


@pytest.mark.parametrize("path", CONSOLE_PATHS)
def test_the_page_is_html_with_the_console_csp_and_the_other_security_headers(client, path):
    response = client.get(path)
    assert response.status_code == 200
    assert response.mimetype == "text/html"
    assert response.headers["Content-Security-Policy"] == CONSOLE_CSP
    for name, value in SECURITY_HEADERS.items():
        if name != "Content-Security-Policy":
            assert response.headers[name] == value
    assert b"2025-11-25" in response.data  # the versions the server speaks, in a meta tag


def test_the_console_csp_allows_nothing_inline_and_nothing_from_elsewhere():
    directives = dict(part.strip().split(" ", 1) for part in CONSOLE_CSP.split(";"))
    assert directives["default-src"] == "'none'"
    for name in ("script-src", "style-src", "connect-src"):
        assert directives[name] == "'self'"
    assert "unsafe" not in CONSOLE_CSP and "http" not in CONSOLE_CSP


def test_the_console_csp_takes_images_and_audio_from_data_urls_only():
    # docs/console.md: a tool's images and audio are shown from data: URLs, and nothing else is.
    directives = dict(part.strip().split(" ", 1) for part in CONSOLE_CSP.split(";"))
    assert directives["img-src"] == "data:" and directives["media-src"] == "data:"


@pytest.mark.parametrize("name", sorted(p.name for p in STATIC_DIR.iterdir() if p.suffix in (".js", ".css")))
def test_every_static_file_is_served_with_the_csp_and_its_type(client, name):
    response = client.get(f"/console/{name}")
    assert response.status_code == 200
    assert response.mimetype == ("text/css" if name.endswith(".css") else "text/javascript")
    assert response.headers["Content-Security-Policy"] == CONSOLE_CSP
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_a_missing_static_file_is_the_json_404_with_the_api_csp(client):
    response = client.get("/console/nope.js")
    assert response.status_code == 404 and response.is_json
    assert response.headers["Content-Security-Policy"] == SECURITY_HEADERS["Content-Security-Policy"]


def test_the_page_refuses_a_foreign_host_like_the_mcp_routes(client):
    response = client.get("/", headers={"Host": "attacker.example"}, environ_base={"SERVER_NAME": "127.0.0.1"})
    assert response.status_code == 421 and response.is_json


def test_the_page_script_tags_are_external_only(client):
    html = client.get("/").get_data(as_text=True)
    assert "<script>" not in html and "style=" not in html and "<style" not in html

"""DNS-rebinding defences and response headers on the default server (no authentication, loopback)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.e2e.raw_clients import BOTH, initialize

pytestmark = pytest.mark.e2e

VERSION = "2025-06-18"
# A version number anywhere in a Server header: "gunicorn/27.0.1", "Werkzeug/3.1 Python/3.11".
VERSION_PATTERN = re.compile(r"\d+\.\d+")


def test_a_foreign_origin_gets_403_on_every_mcp_route(server):
    foreign = {"Origin": "https://evil.example"}
    assert httpx.post(server.url, json=initialize(VERSION), headers={"Accept": BOTH, **foreign},
                      timeout=15).status_code == 403
    assert httpx.get(server.url, headers={"Accept": "text/event-stream", **foreign}, timeout=15).status_code == 403
    assert httpx.get(server.base_url + "/sse", headers=foreign, timeout=15).status_code == 403
    # A local development page is allowed by default.
    allowed = httpx.post(server.url, json=initialize(VERSION),
                         headers={"Accept": BOTH, "Origin": "http://localhost:6274"}, timeout=15)
    assert allowed.status_code == 200


def test_a_foreign_host_on_a_loopback_listener_gets_421(server):
    rebound = httpx.post(server.url, json=initialize(VERSION),
                         headers={"Accept": BOTH, "Host": "evil.example"}, timeout=15)
    assert rebound.status_code == 421
    assert "MCP_ALLOWED_HOSTS" in rebound.json()["error"]["message"]
    assert httpx.get(server.base_url + "/sse", headers={"Host": "attacker.test:8000"}, timeout=15).status_code == 421


def test_no_cors_headers_unless_origins_are_configured(server):
    answer = httpx.post(server.url, json=initialize(VERSION),
                        headers={"Accept": BOTH, "Origin": "http://localhost:6274"}, timeout=15)
    assert "Access-Control-Allow-Origin" not in answer.headers


def responses_of_every_kind(server) -> dict[str, httpx.Response]:
    """One response per kind: success, each refusal, a stream."""
    responses = {
        "200 json": httpx.post(server.url, json=initialize(VERSION), headers={"Accept": BOTH}, timeout=15),
        "200 health": httpx.get(server.base_url + "/healthz", timeout=15),
        "400 bad json": httpx.post(server.url, content=b"{", headers={"Accept": BOTH,
                                                                       "Content-Type": "application/json"}, timeout=15),
        "404 route": httpx.get(server.base_url + "/nowhere", timeout=15),
        "405 method": httpx.put(server.url, timeout=15),
        "415 type": httpx.post(server.url, content=b"x", headers={"Content-Type": "text/plain"}, timeout=15),
        "403 origin": httpx.get(server.url, headers={"Origin": "https://evil.example"}, timeout=15),
    }
    with httpx.stream("GET", server.url, headers={"Accept": "text/event-stream"}, timeout=15) as stream:
        responses["200 stream"] = stream
    return responses


def test_every_response_carries_the_security_headers(server):
    for kind, response in responses_of_every_kind(server).items():
        assert response.headers.get("X-Content-Type-Options") == "nosniff", kind
        assert response.headers.get("X-Frame-Options") == "DENY", kind
        assert "default-src 'none'" in response.headers.get("Content-Security-Policy", ""), kind
        assert response.headers.get("Referrer-Policy") == "no-referrer", kind
        assert "Cache-Control" in response.headers, kind


def test_no_server_header_names_a_version(server):
    for kind, response in responses_of_every_kind(server).items():
        for value in response.headers.get_list("Server"):
            assert not VERSION_PATTERN.search(value), (kind, value)
        assert "X-Powered-By" not in response.headers, kind

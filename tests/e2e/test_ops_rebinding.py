"""The operations endpoints against DNS rebinding: /healthz, /readyz and /metrics check Origin and Host as /mcp does.

A page that rebinds its own name to 127.0.0.1 sends its Origin (when it fetches) and
its name as Host; either gets the same JSON refusal /mcp gives, never the metrics.
"""

from __future__ import annotations

import httpx
import pytest

from flask_mcp_gevent.errors import INVALID_REQUEST
from flask_mcp_gevent.web.response_headers import SECURITY_HEADERS
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e

OPS_PATHS = ["/healthz", "/readyz", "/metrics"]


def assert_refused(response: httpx.Response, status: int, hint: str) -> None:
    """A JSON-RPC error body with the status, the hint and the security headers; no metrics in it."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["error"]["code"] == INVALID_REQUEST
    assert hint in body["error"]["message"]
    assert "mcp_" not in response.text and "sessions" not in response.text
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value


@pytest.mark.parametrize("path", OPS_PATHS)
def test_a_foreign_origin_gets_403(server, path):
    refused = httpx.get(server.base_url + path, headers={"Origin": "http://rebound.example"}, timeout=15)
    assert_refused(refused, 403, "MCP_ALLOWED_ORIGINS")


@pytest.mark.parametrize("path", OPS_PATHS)
def test_a_foreign_host_on_a_loopback_listener_gets_421(server, path):
    refused = httpx.get(server.base_url + path, headers={"Host": f"rebound.example:{server.port}"}, timeout=15)
    assert_refused(refused, 421, "MCP_ALLOWED_HOSTS")


@pytest.mark.parametrize("path", OPS_PATHS)
def test_local_clients_still_get_their_answer(server, path):
    for headers in ({}, {"Host": f"localhost:{server.port}"}, {"Origin": "http://localhost:9090"}):
        assert httpx.get(server.base_url + path, headers=headers, timeout=15).status_code == 200, headers


def test_with_allowed_hosts_set_only_those_names_are_answered():
    with ServerProcess(env={"MCP_ALLOWED_HOSTS": "127.0.0.1,mcp.example.com"}) as named:
        metrics = named.base_url + "/metrics"
        assert httpx.get(metrics, headers={"Host": "mcp.example.com"}, timeout=15).status_code == 200
        assert_refused(httpx.get(metrics, headers={"Host": "localhost"}, timeout=15), 421, "MCP_ALLOWED_HOSTS")

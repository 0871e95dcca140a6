"""The shipped nginx site answers what it refuses itself as JSON-RPC errors with the security headers."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.web.response_headers import SECURITY_HEADERS_WITH_CACHE
from tests.e2e.raw_http import exchange
from tests.e2e.server_process import ServerProcess
from tests.e2e.test_deploy_nginx import Nginx, nginx_binary, proxied  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.nginx]

REFUSED_BY_NGINX = {
    "bad request line": (b"GET /a b c HTTP/1.1\r\n\r\n", 400),
    "URI too long": (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414),
    "header too large": (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 400),
    "body too large": (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                       b"Content-Length: 5000000\r\nConnection: close\r\n\r\n", 413),
    "the error page itself": (b"GET /.mcp-error HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 404),
}


def assert_json_error(answer, status: int, code: int = -32600) -> None:
    """A JSON-RPC error with the status and every security header."""
    assert answer.status == status
    assert answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None and body["error"]["code"] == code
    assert body["error"]["message"] and answer.body.endswith(b"}\n")
    for name, value in SECURITY_HEADERS_WITH_CACHE:
        assert answer.headers[name.lower()] == value


@pytest.mark.parametrize("case", REFUSED_BY_NGINX)
def test_what_nginx_refuses_itself_is_a_json_rpc_error(proxied, case):  # noqa: F811
    _, proxy = proxied
    data, status = REFUSED_BY_NGINX[case]
    assert_json_error(exchange(proxy.port, data), status)


def test_what_gunicorn_answers_passes_through_unchanged(proxied):  # noqa: F811
    _, proxy = proxied
    answer = exchange(proxy.port, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                                  b"Content-Length: 2\r\nConnection: close\r\n\r\n{}")
    assert_json_error(answer, 415)
    assert "Content-Type" in answer.json()["error"]["message"]  # the server's own words, not the proxy's


def test_a_server_that_is_down_is_a_502_json_rpc_error():
    nginx = nginx_binary()
    if nginx is None:
        pytest.skip("nginx is not installed")
    with ServerProcess() as server:
        proxy = Nginx(nginx, server.port).start()
        try:
            server.stop()
            answer = exchange(proxy.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert_json_error(answer, 502, -32004)
        finally:
            proxy.stop()

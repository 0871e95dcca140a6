"""HTTP that gunicorn refuses before the app sees it is answered as JSON, with the security headers."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.web.response_headers import SECURITY_HEADERS_WITH_CACHE
from tests.e2e.raw_http import exchange

pytestmark = pytest.mark.e2e

MALFORMED = {
    "bad request line": (b"GET /a b c HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 400),
    "bad HTTP version": (b"GET /mcp HTTP/9.x\r\nHost: 127.0.0.1\r\n\r\n", 400),
    "bad header name": (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Name: x\r\n\r\n", 400),
    "URI too long": (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414),
    "too many headers": (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         + b"".join(b"X-%d: x\r\n" % n for n in range(200)) + b"\r\n", 431),
    "header too large": (b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_gunicorns_own_refusals_are_json_rpc_errors_with_the_security_headers(server, case):
    data, status = MALFORMED[case]
    answer = exchange(server.port, data)
    assert answer.status == status
    assert answer.headers["content-type"] == "application/json"
    body = answer.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["code"] == -32600 and body["error"]["message"]
    assert answer.body.endswith(b"}\n")
    for name, value in SECURITY_HEADERS_WITH_CACHE:
        assert answer.headers[name.lower()] == value
    assert answer.headers["connection"] == "close"
    assert f"http malformed request status={status}" in server.read_log()


def test_the_limits_gunicorn_enforces_are_named_in_the_message(server):
    assert "4094 bytes" in exchange(server.port, MALFORMED["URI too long"][0]).json()["error"]["message"]
    message = exchange(server.port, MALFORMED["too many headers"][0]).json()["error"]["message"]
    assert "100 headers" in message and "8190 bytes" in message

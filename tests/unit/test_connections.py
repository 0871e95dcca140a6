"""The per-address bound on requests in progress (pipeline.ConnectionLimit), without a server."""

from __future__ import annotations

import json

import pytest

from flask_mcp_gevent.web.pipeline import ConnectionLimit


def ok_app(environ, start_response):
    """A WSGI app that answers 200 with one chunk."""
    start_response("200 OK", [("Content-Type", "text/plain")])
    return iter([b"ok"])


def call(limit: ConnectionLimit, address: str):
    """Start a request from address; return its status line, headers and (unconsumed) body."""
    seen = []
    body = limit({"REMOTE_ADDR": address, "REQUEST_METHOD": "POST", "PATH_INFO": "/mcp"},
                 lambda status, headers, exc_info=None: seen.append((status, dict(headers))))
    status, headers = seen[0]
    return status, headers, body


def test_an_address_past_the_bound_gets_429_until_one_of_its_requests_ends():
    limit = ConnectionLimit(ok_app, 2)
    first = call(limit, "192.0.2.1")
    call(limit, "192.0.2.1")
    status, headers, body = call(limit, "192.0.2.1")
    assert status.startswith("429")
    assert headers["Retry-After"] and headers["X-Content-Type-Options"] == "nosniff"
    assert "MCP_MAX_CONNECTIONS_PER_ADDRESS" in json.loads(b"".join(body))["error"]["message"]
    assert call(limit, "192.0.2.2")[0].startswith("200")  # another address is served
    first[2].close()  # the server closes a response's body when it ends
    assert call(limit, "192.0.2.1")[0].startswith("200")


def test_ended_requests_leave_nothing_behind():
    limit = ConnectionLimit(ok_app, 2)
    for _ in range(5):
        call(limit, "192.0.2.1")[2].close()
    assert limit.in_progress == {}


class ClosableBody:
    """An app's body with a close() that records the call, and may fail."""

    def __init__(self, fails: bool = False) -> None:
        self.chunks = iter([b"ok"])
        self.closed = False
        self.fails = fails

    def __iter__(self):
        return self.chunks

    def close(self) -> None:
        self.closed = True
        if self.fails:
            raise OSError("close failed")


def test_the_server_iterates_the_apps_own_iterator_and_closing_closes_it_and_releases_the_address():
    app_body = ClosableBody()
    limit = ConnectionLimit(lambda environ, start_response: (start_response("200 OK", []), app_body)[1], 1)
    body = call(limit, "192.0.2.1")[2]
    # No wrapper's __next__ between the server's write loop and the app's generator.
    assert iter(body) is app_body.chunks
    body.close()
    assert app_body.closed and limit.in_progress == {}


def test_an_app_body_whose_close_fails_still_releases_the_address():
    limit = ConnectionLimit(lambda environ, start_response: (start_response("200 OK", []), ClosableBody(True))[1], 1)
    body = call(limit, "192.0.2.1")[2]
    with pytest.raises(OSError):
        body.close()
    assert limit.in_progress == {}

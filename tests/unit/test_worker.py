"""The gunicorn worker's answers to malformed HTTP: gunicorn's statuses, as JSON with the security headers."""

from __future__ import annotations

import json
import socket
from types import SimpleNamespace

import gevent
import pytest
from gunicorn.config import Config
from gunicorn.http import wsgi
from gunicorn.http.errors import (
    ForbiddenProxyRequest,
    InvalidChunkSize,
    InvalidHeaderName,
    InvalidRequestLine,
    InvalidResponseHeader,
    LimitRequestHeaders,
    LimitRequestLine,
    UnsupportedTransferCoding,
)
from gunicorn.http.parser import RequestParser

from flask_mcp_gevent.serving.gunicorn_worker import (
    HeadersWithBody,
    NamedListener,
    error_page,
    explain,
    spawn_untracked,
    status_for,
)
from flask_mcp_gevent.web.response_headers import SECURITY_HEADERS_WITH_CACHE


@pytest.mark.parametrize(("exc", "status"), [
    (InvalidRequestLine("x"), 400),
    (InvalidHeaderName("x"), 400),
    (InvalidChunkSize(b"zz"), 400),
    (LimitRequestLine(9000, 4094), 414),
    (LimitRequestHeaders("too many"), 431),
    (ForbiddenProxyRequest("10.0.0.1"), 403),
    (UnsupportedTransferCoding("gzip"), 501),
    (InvalidResponseHeader("X-Bad"), 500),
    (RuntimeError("bug"), 500),
])
def test_each_error_gets_the_status_gunicorn_gives_it(exc, status):
    assert status_for(exc) == status


def test_an_error_page_is_a_json_rpc_error_with_the_security_headers_that_closes_the_connection():
    head, _, body = error_page(431, "too large").partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.1 431 Request Header Fields Too Large"
    headers = dict(line.split(": ", 1) for line in lines[1:])
    assert headers["Content-Type"] == "application/json" and headers["Connection"] == "close"
    assert int(headers["Content-Length"]) == len(body)
    assert all(headers[name] == value for name, value in SECURITY_HEADERS_WITH_CACHE)
    assert json.loads(body) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "too large"}}
    assert body.endswith(b"\n")


def test_a_500_page_is_an_internal_error_with_its_correlation_id():
    body = error_page(500, "Internal error", {"correlationId": "abc"}).partition(b"\r\n\r\n")[2]
    assert json.loads(body)["error"] == {"code": -32603, "message": "Internal error", "data": {"correlationId": "abc"}}


def test_the_messages_name_gunicorns_limits():
    cfg = SimpleNamespace(limit_request_line=4094, limit_request_fields=100, limit_request_field_size=8190)
    assert "4094 bytes" in explain(414, cfg)
    assert "100 headers" in explain(431, cfg) and "8190 bytes" in explain(431, cfg)


def test_a_listener_closed_while_a_request_is_read_still_gives_its_name():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    named = NamedListener(listener)
    address = listener.getsockname()
    listener.close()  # stop_accepting closed it while gunicorn's handler was still reading the client's bytes
    assert named.getsockname() == address
    assert named.fileno() == -1  # everything else is the socket's own


class RecordingSocket:
    """A socket that keeps each send, in order."""

    def __init__(self) -> None:
        self.sends: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.sends.append(bytes(data))

    def send(self, data: bytes) -> int:
        self.sends.append(bytes(data))
        return len(data)


def respond(request: bytes, status: str, headers: list[tuple[str, str]], body: list[bytes]) -> list[bytes]:
    """What gunicorn's own Response sends through HeadersWithBody for one request, send by send."""
    cfg = Config()
    req = next(iter(RequestParser(cfg, iter([request]), ("127.0.0.1", 1))))
    sock = RecordingSocket()
    response_socket = HeadersWithBody(sock)
    response = wsgi.Response(req, response_socket, cfg)
    response.start_response(status, headers)
    for chunk in body:
        response.write(chunk)
    response.close()
    response_socket.flush()
    return sock.sends


GET = b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n"


def test_a_response_of_known_length_goes_out_in_one_send_headers_and_body():
    sends = respond(GET, "200 OK", [("Content-Type", "application/json"), ("Content-Length", "2")], [b"{}"])
    assert len(sends) == 1
    assert sends[0].startswith(b"HTTP/1.1 200 OK\r\n") and sends[0].endswith(b"\r\nContent-Length: 2\r\n\r\n{}")


def test_a_response_without_a_body_still_sends_its_headers_when_the_request_ends():
    sends = respond(GET, "202 Accepted", [("Content-Length", "0")], [b""])
    assert len(sends) == 1 and sends[0].startswith(b"HTTP/1.1 202 Accepted\r\n") and sends[0].endswith(b"\r\n\r\n")
    head = respond(b"HEAD /mcp HTTP/1.1\r\nHost: x\r\n\r\n", "200 OK", [("Content-Length", "5")], [b"hello"])
    assert len(head) == 1 and head[0].endswith(b"Content-Length: 5\r\n\r\n")


def test_a_stream_sends_its_headers_at_once_before_any_event():
    cfg = Config()
    req = next(iter(RequestParser(cfg, iter([GET]), ("127.0.0.1", 1))))
    sock = RecordingSocket()
    response = wsgi.Response(req, HeadersWithBody(sock), cfg)
    response.start_response("200 OK", [("Content-Type", "text/event-stream")])
    response.write(b"")  # a stream that has nothing to say yet
    assert len(sock.sends) == 1 and b"Transfer-Encoding: chunked" in sock.sends[0]


def test_a_direct_send_goes_out_after_the_headers_held_before_it():
    sock = RecordingSocket()
    response_socket = HeadersWithBody(sock)
    response_socket.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
    assert sock.sends == []
    response_socket.send(b"HTTP/1.1 100 Continue\r\n\r\n")
    assert sock.sends == [b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", b"HTTP/1.1 100 Continue\r\n\r\n"]


class ShortSendSocket(RecordingSocket):
    """A socket whose send takes only the first few bytes, as a full kernel buffer would."""

    def send(self, data: bytes) -> int:
        self.sends.append(bytes(data[:5]))
        return 5


def test_what_one_send_leaves_goes_out_after_it_in_order():
    sock = ShortSendSocket()
    HeadersWithBody(sock).sendall(b"0123456789abcdef")
    assert sock.sends == [b"01234", b"56789abcdef"]


@pytest.fixture
def greenlet_tree_setting():
    """gevent's track_greenlet_tree, put back as it was after the test."""
    before = gevent.config.track_greenlet_tree
    yield
    gevent.config.track_greenlet_tree = before


def test_the_workers_greenlets_keep_no_spawning_tree(greenlet_tree_setting):
    spawn_untracked({})
    greenlet = gevent.spawn(lambda: None)
    assert greenlet.spawning_stack is None and greenlet.spawning_greenlet is None
    greenlet.join()


def test_gevents_own_variable_keeps_the_spawning_tree(greenlet_tree_setting):
    gevent.config.track_greenlet_tree = True
    spawn_untracked({"GEVENT_TRACK_GREENLET_TREE": "1"})
    greenlet = gevent.spawn(lambda: None)
    assert greenlet.spawning_stack is not None
    greenlet.join()

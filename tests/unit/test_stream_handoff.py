"""An event stream leaving its request after its first frame, and the worker's writer that takes the rest over."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import gevent
import pytest
from gevent import socket
from gevent.pool import Group

from flask_mcp_gevent.serving.gunicorn_worker import HeadersWithBody, McpWorker, write_handed_off
from flask_mcp_gevent.stream_handoff import HandedOffBody, HandOff, stream_body


class Frames:
    """A stream's frames, recording whether the stream's own cleanup (its generator's finally) ran."""

    def __init__(self, *frames: bytes) -> None:
        self.closed = False
        self.generator = self.run(frames)

    def run(self, frames: tuple[bytes, ...]) -> Iterator[bytes]:
        try:
            yield from frames
        finally:
            self.closed = True


def test_the_first_frame_goes_out_then_the_body_leaves_its_request_with_the_rest_unread():
    frames = Frames(b"first", b"second")
    body = HandedOffBody(frames.generator)
    assert next(iter(body)) == b"first"
    with pytest.raises(HandOff) as handoff:
        next(body)
    assert handoff.value.body is body and body.handed_off
    body.close()  # what the server's request loop calls on its way out: the stream goes on
    assert not frames.closed
    assert next(body.frames) == b"second"


def test_a_handed_off_body_ends_once_closing_its_stream_then_running_its_ends():
    frames, ended = Frames(b"first", b"second"), []
    body = HandedOffBody(frames.generator)
    next(body)
    with pytest.raises(HandOff):
        next(body)
    body.ends.append(lambda: ended.append(frames.closed))
    body.end()
    body.end()
    assert ended == [True]


def test_a_body_closed_before_it_was_handed_off_ends_its_stream_at_once():
    frames = Frames(b"first", b"second")
    body = HandedOffBody(frames.generator)
    next(body)
    body.close()
    assert frames.closed


def test_a_stream_is_handed_off_only_where_the_server_takes_streams():
    frames = Frames(b"x").generator
    assert stream_body({}, frames) is frames
    assert stream_body({"gunicorn.socket": HeadersWithBody(None)}, frames) is frames
    assert isinstance(stream_body({"gunicorn.socket": HeadersWithBody(None, True)}, frames), HandedOffBody)
    assert stream_body({"gunicorn.socket": SimpleNamespace(takes_streams="yes")}, frames) is frames


def received(sock: socket.socket) -> bytes:
    """Everything the peer sent until it closed."""
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def handed_off(*frames: bytes) -> tuple[HandedOffBody, Frames, list[str]]:
    """A body already handed off, its frames, and what its ends recorded."""
    recorded = Frames(b"opening", *frames)
    body = HandedOffBody(recorded.generator)
    next(body)
    with pytest.raises(HandOff):
        next(body)
    ended: list[str] = []
    body.ends.append(lambda: ended.append("released"))
    return body, recorded, ended


def test_the_writer_sends_each_frame_as_a_chunk_ends_the_stream_and_closes_the_connection():
    ours, client = socket.socketpair()
    body, frames, ended = handed_off(b"event: a\n\n", b"", b"event: b\n\n")
    writer = gevent.spawn(write_handed_off, ours, body, True)
    assert received(client) == b"A\r\nevent: a\n\n\r\nA\r\nevent: b\n\n\r\n0\r\n\r\n"
    writer.join(timeout=5)
    assert frames.closed and ended == ["released"] and ours.fileno() == -1


def test_to_http_1_0_the_writer_sends_the_frames_as_they_are_and_the_close_ends_them():
    ours, client = socket.socketpair()
    body, _, ended = handed_off(b"event: a\n\n")
    gevent.spawn(write_handed_off, ours, body, False).join(timeout=5)
    assert received(client) == b"event: a\n\n" and ended == ["released"]


def test_a_client_gone_ends_the_stream_and_runs_its_ends():
    ours, client = socket.socketpair()
    body, frames, ended = handed_off(*([b"x" * 65536] * 64))
    client.close()
    gevent.spawn(write_handed_off, ours, body, True).join(timeout=5)
    assert frames.closed and ended == ["released"]


def test_the_worker_takes_the_connection_from_gunicorns_socket_whose_close_then_closes_nothing():
    gunicorns, client = socket.socketpair()
    body, frames, ended = handed_off(b"event: a\n\n")
    worker = SimpleNamespace(handed_off=Group())
    response_socket = HeadersWithBody(gunicorns, True)
    McpWorker.take_over(worker, response_socket, body, True)
    gunicorns.close()  # what gunicorn's request loop does on its way out
    assert response_socket.sock is not gunicorns  # a cut-off now shuts the stream's own socket down
    assert received(client) == b"A\r\nevent: a\n\n\r\n0\r\n\r\n"
    worker.handed_off.join(timeout=5)
    assert frames.closed and ended == ["released"] and len(worker.handed_off) == 0


def test_a_connection_closed_before_the_worker_took_it_ends_the_stream_there():
    gunicorns, _ = socket.socketpair()
    gunicorns.close()
    body, frames, ended = handed_off(b"event: a\n\n")
    worker = SimpleNamespace(handed_off=Group())
    McpWorker.take_over(worker, HeadersWithBody(gunicorns, True), body, True)
    assert frames.closed and ended == ["released"] and len(worker.handed_off) == 0

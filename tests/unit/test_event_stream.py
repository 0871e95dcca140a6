"""event_stream: the frames both HTTP transports send (built by encoding.format_sse_event), and a request's stream."""

from __future__ import annotations

import socket

import gevent
import gevent.event

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.session import Session
from flask_mcp_gevent.store.memory import MemoryStore
from flask_mcp_gevent.transports.event_stream import (
    RequestStream,
    connection_closer,
    is_response,
    priming_frame,
    stream_events,
)


def test_the_priming_frame_has_an_id_a_retry_and_empty_data_but_no_event_name():
    assert priming_frame("0/abc", 1000) == b"id: 0/abc\nretry: 1000\ndata: \n\n"


def test_only_results_and_errors_are_responses():
    assert is_response(b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert is_response(b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}')
    assert not is_response(b'{"jsonrpc":"2.0","method":"notifications/progress"}')


def test_the_connection_closer_shuts_the_clients_socket_down_and_there_is_none_without_a_socket():
    server_side, client_side = socket.socketpair()
    with server_side, client_side:
        close = connection_closer({"gunicorn.socket": server_side})
        assert close is not None
        close()
        assert client_side.recv(1) == b""  # the client sees the end of the stream
    assert connection_closer({}) is None


def notification(n: int) -> dict:
    """A distinguishable notification."""
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}


def test_a_session_stream_hands_the_server_an_empty_chunk_before_it_waits_so_no_sent_frame_stays_held():
    store = MemoryStore(Settings.from_mapping({}))
    try:
        session = Session()
        store.sessions.create_session(session)
        frames = stream_events(store.events.subscribe(session.id), 5.0, b": open\n\n")
        assert next(frames) == b": open\n\n"
        for n in (1, 2):
            store.events.publish(session.id, notification(n))
        # Two events queued: the first follows the second at once; only when none waits comes the empty chunk.
        assert [next(frames)[:6] for _ in range(3)] == [b"id: 1\n", b"id: 2\n", b""]
        store.events.publish(session.id, notification(3))
        assert [next(frames)[:6] for _ in range(2)] == [b"id: 3\n", b""]
        frames.close()
    finally:
        store.stop()


class FakeReplay:
    """A replay log that numbers what it keeps."""

    def __init__(self) -> None:
        self.kept: list[dict] = []

    def keep(self, message: dict) -> str:
        self.kept.append(message)
        return str(len(self.kept))

    def keep_response(self, response: dict) -> str:
        return self.keep(response)


def frames_of(stream: RequestStream, greenlet: gevent.Greenlet) -> list[bytes]:
    """Every frame the stream writes, from its first item to its end."""
    return list(stream.events(stream.first_item(greenlet), greenlet, None, ()))


def test_a_request_stream_with_a_replay_frames_each_message_and_the_response_with_their_event_ids():
    replay = FakeReplay()
    stream = RequestStream("test", replay=replay)
    greenlet = gevent.spawn(lambda: (stream({"method": "notifications/progress"}), {"id": 1, "result": {}})[1])
    frames = frames_of(stream, greenlet)
    assert [frame.split(b"\n")[0] for frame in frames] == [b"id: 1", b"id: 2"]
    assert replay.kept == [{"method": "notifications/progress"}, {"id": 1, "result": {}}]


def test_a_request_stream_with_a_replay_lets_the_request_finish_into_it_after_the_stream_ended():
    replay = FakeReplay()
    stream = RequestStream("test", replay=replay)
    release = gevent.event.Event()
    greenlet = gevent.spawn(lambda: (release.wait(), stream({"method": "notifications/message"}), {"id": 1})[2])
    stream.end(greenlet)  # the client left
    release.set()
    greenlet.join(5)
    gevent.sleep(0)  # the link that keeps the response runs
    assert replay.kept == [{"method": "notifications/message"}, {"id": 1}]


def test_a_request_stream_without_a_replay_cancels_the_request_when_it_ends_and_ignores_close_stream():
    stream = RequestStream("test")
    stream.close_stream()  # nothing would keep the rest: a no-op
    assert stream.outbox.qsize() == 0
    greenlet = gevent.spawn(gevent.sleep, 30)
    gevent.sleep(0)
    stream.end(greenlet)
    greenlet.join(5)
    assert greenlet.dead and isinstance(greenlet.value, gevent.GreenletExit)


def test_a_bounded_request_stream_cuts_off_a_client_that_does_not_read():
    closed = []
    stream = RequestStream("test", max_count=2, close_connection=lambda: closed.append(True))
    for n in range(3):
        stream({"method": "notifications/progress", "params": {"progress": n}})
    assert stream.reason == "slow consumer" and closed == [True] and stream.outbox.qsize() == 0

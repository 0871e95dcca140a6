"""A 2026-07-28 request with nothing to stream runs in its POST's own greenlet, and a shutdown still stops it.

The POST's greenlet outlives the request (it serves the connection's next one), so a shutdown must
wait for the request, not for the greenlet, and must answer a request it stops with the documented error.
"""

from __future__ import annotations

import dataclasses

import gevent
import pytest
from gevent.event import Event

from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.stateless import http as stateless_http
from flask_mcp_gevent.stateless.metadata import ephemeral_session
from mcp_tools import Registry, tool

WAIT_S = 5.0
RELEASE = Event()
STARTED = Event()
GREENLETS: list[gevent.Greenlet] = []


@tool(input_schema={"type": "object"})
def hold() -> str:
    """Wait until the test releases it, noting the greenlet it runs in."""
    GREENLETS.append(gevent.getcurrent())
    STARTED.set()
    RELEASE.wait(WAIT_S)
    return "released"


@pytest.fixture
def registry() -> Registry:
    """Only the holding tool, blocked at the start of every test."""
    RELEASE.clear()
    STARTED.clear()
    GREENLETS.clear()
    registry = Registry()
    registry.add_function(hold)
    yield registry
    RELEASE.set()


def stateless_call(name: str, meta: dict | None = None):
    """A 2026-07-28 tools/call message for name, with _meta beyond the required keys."""
    body = {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        **(meta or {})}}}
    return parse_body(dumps(body)).messages[0]


# A WSGI environ without gunicorn's socket: the stream has no connection to shut down.
NO_SOCKET: dict[str, str] = {}


def serve(server, message) -> gevent.Greenlet:
    """Answer message as the POST would, in a greenlet standing for the POST's own."""
    return gevent.spawn(stateless_http.answer, server, ephemeral_session(message.meta, None), message, NO_SOCKET,
                       None)


def json_body(response) -> dict:
    """The JSON body of a buffered response."""
    assert response.mimetype == "application/json"
    return loads(response.get_data())


def test_a_request_with_nothing_to_stream_runs_in_the_posts_own_greenlet(server):
    post = serve(server, stateless_call("hold"))
    assert STARTED.wait(WAIT_S)
    assert GREENLETS == [post]  # no greenlet spawned for the request
    RELEASE.set()
    body = json_body(post.get(timeout=WAIT_S))
    assert body["result"]["content"][0]["text"] == "released"
    assert len(server.calls) == 0


def test_a_request_that_asked_for_progress_gets_its_own_greenlet_and_a_stream(server):
    post = serve(server, stateless_call("hold", {"progressToken": "p1"}))
    assert STARTED.wait(WAIT_S)
    assert GREENLETS and GREENLETS[0] is not post
    RELEASE.set()
    response = post.get(timeout=WAIT_S)
    # The result came first, so it is still answered as JSON; what matters is where the tool ran.
    assert json_body(response)["result"]["content"][0]["text"] == "released"


def test_a_shutdown_stops_a_request_running_in_place_with_the_documented_error(server, monkeypatch):
    monkeypatch.setattr(server.events, "outlives_worker", True)  # as on Redis, where answers outlive the worker
    monkeypatch.setattr(server, "settings", dataclasses.replace(server.settings, graceful_timeout_s=1))
    post = serve(server, stateless_call("hold"))
    assert STARTED.wait(WAIT_S)
    with gevent.Timeout(WAIT_S):
        stopped = server.drain()
    assert stopped == 1
    body = json_body(post.get(timeout=WAIT_S))
    assert body["id"] == 41
    assert body["error"]["code"] == -32004  # the documented "call it again" of a stopping worker
    assert "stopped before it finished" in body["error"]["message"]


def test_a_shutdown_does_not_wait_for_a_posts_greenlet_whose_request_is_over(server, monkeypatch):
    monkeypatch.setattr(server.events, "outlives_worker", True)
    RELEASE.set()
    connection_done = Event()

    def keep_alive_connection():
        """Answer one request in place, then live on as a kept-alive connection does."""
        hold = stateless_call("hold")
        stateless_http.answer(server, ephemeral_session(hold.meta, None), hold, NO_SOCKET, None)
        connection_done.wait(WAIT_S)

    connection = gevent.spawn(keep_alive_connection)
    gevent.sleep(0.05)
    assert not connection.dead
    assert server.drain() == 0
    assert not connection.dead  # nothing killed: the request it served had finished
    connection_done.set()
    connection.join(WAIT_S)

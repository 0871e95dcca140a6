"""A tool that blocks until its test releases it, and a legacy call of it started as a legacy POST starts one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gevent
from gevent.event import Event

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.messages import parse_body
from mcp_tools import Registry, tool
from tests.protocol.conftest import Rpc

RELEASE = Event()


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def wait_for_release() -> str:
    """Block until the test releases it."""
    RELEASE.wait()
    return "released"


def blocking_rpc(make_server: Callable[..., Any], environ: dict[str, str]) -> Rpc:
    """An initialized legacy session of a server built from environ whose only tool blocks (RELEASE cleared)."""
    RELEASE.clear()
    registry = Registry()
    registry.add_function(wait_for_release)
    server = make_server(environ, registry=registry)
    client = Rpc(server, server.open_session("sse"))
    client.initialize()
    return client


def start_call(rpc: Rpc, request_id: int, on_done: Callable[[Any], None]) -> gevent.Greenlet:
    """Start the blocking call; its answer goes to on_done from the call's greenlet, as a legacy POST's does."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
               "params": {"name": "wait_for_release", "arguments": {}}}
    (greenlet,), errors = rpc.server.accept(rpc.session, parse_body(dumps(message)), rpc.sent.append,
                                            on_done=on_done)
    assert errors == []
    gevent.sleep(0)
    return greenlet

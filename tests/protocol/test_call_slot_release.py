"""A legacy call's slot on the Redis hub is released ahead of its answer, and still when no answer goes out."""

from __future__ import annotations

import gevent
import pytest
from gevent.event import Event

from mcp_server.encoding import dumps
from mcp_server.hub.redis_keys import call_slots_key
from mcp_server.messages import parse_body
from mcp_tools import Registry, tool
from tests.protocol.conftest import Rpc
from tests.redis_server import redis_server  # noqa: F401  (fixture)
from tests.support.waiting import wait_until

RELEASE = Event()


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def hold_until_released() -> str:
    """Block until the test releases it."""
    RELEASE.wait()
    return "released"


@pytest.fixture
def rpc(make_core, redis_server) -> Rpc:  # noqa: F811
    """An initialized legacy session of a core on the Redis hub whose only tool blocks."""
    RELEASE.clear()
    redis_server.client().flushdb()
    registry = Registry()
    registry.add_function(hold_until_released)
    core = make_core({"MCP_REDIS_URL": redis_server.url}, registry=registry)
    client = Rpc(core, core.open_session("sse"))
    client.initialize()
    yield client
    RELEASE.set()


def start_call(rpc: Rpc, request_id: int, answers: list) -> gevent.Greenlet:
    """Start the blocking call as a legacy POST does: its answer goes to on_done, stored by the call's greenlet."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
               "params": {"name": "hold_until_released", "arguments": {}}}
    (greenlet,), errors = rpc.core.accept(rpc.session, parse_body(dumps(message)), rpc.sent.append,
                                          on_done=lambda answer: answers.append(answer)
                                          or rpc.core.hub.deliver_later(rpc.session.id, answer))
    assert errors == []
    return greenlet


def running_calls(rpc: Rpc, redis_server) -> int:  # noqa: F811
    """How many call slots the session holds in Redis."""
    return redis_server.client().zcard(call_slots_key(rpc.session.id))


@pytest.mark.redis
def test_a_legacy_call_frees_its_slot_with_its_answer(rpc, redis_server):  # noqa: F811
    answers: list = []
    call = start_call(rpc, 1, answers)
    assert wait_until(lambda: running_calls(rpc, redis_server) == 1)
    RELEASE.set()
    call.join(5)
    rpc.core.hub.flush(5)
    assert answers and answers[0]["result"]["content"] == [{"type": "text", "text": "released"}]
    assert running_calls(rpc, redis_server) == 0


@pytest.mark.redis
def test_a_cancelled_legacy_call_that_sends_no_answer_still_frees_its_slot(rpc, redis_server):  # noqa: F811
    answers: list = []
    call = start_call(rpc, 2, answers)
    assert wait_until(lambda: running_calls(rpc, redis_server) == 1)
    rpc.core.hub.cancel(rpc.session.id, 2)
    call.join(5)
    assert answers == []  # a cancelled request gets no response
    assert wait_until(lambda: running_calls(rpc, redis_server) == 0)
    assert not rpc.core.hub._releases  # nothing held for a greenlet that is gone

"""A legacy call's slot on the Redis store is freed before its answer is stored, and still when no answer goes out."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.store.redis_keys import call_slots_key
from tests.protocol.blocking_call import RELEASE, blocking_rpc, start_call
from tests.protocol.conftest import Rpc
from tests.redis_server import redis_server  # noqa: F401  (fixture)
from tests.support.waiting import wait_until


@pytest.fixture
def rpc(make_server, redis_server) -> Rpc:  # noqa: F811
    """An initialized legacy session of a server on the Redis store whose only tool blocks."""
    redis_server.client().flushdb()
    client = blocking_rpc(make_server, {"MCP_REDIS_URL": redis_server.url})
    yield client
    RELEASE.set()


def store_as_legacy_posts_do(rpc: Rpc, answers: list):
    """The on_done a legacy POST gives its call: the answer is stored from the call's greenlet."""
    return lambda answer: answers.append(answer) or rpc.server.store.events.deliver(rpc.session.id, answer)


def running_calls(rpc: Rpc, redis_server) -> int:  # noqa: F811
    """How many call slots the session holds in Redis."""
    return redis_server.client().zcard(call_slots_key(rpc.session.id))


@pytest.mark.redis
def test_a_legacy_call_frees_its_slot_with_its_answer(rpc, redis_server):  # noqa: F811
    answers: list = []
    call = start_call(rpc, 1, store_as_legacy_posts_do(rpc, answers))
    assert wait_until(lambda: running_calls(rpc, redis_server) == 1)
    RELEASE.set()
    call.join(5)
    assert answers and answers[0]["result"]["content"] == [{"type": "text", "text": "released"}]
    assert running_calls(rpc, redis_server) == 0


@pytest.mark.redis
def test_a_cancelled_legacy_call_that_sends_no_answer_still_frees_its_slot(rpc, redis_server):  # noqa: F811
    answers: list = []
    call = start_call(rpc, 2, store_as_legacy_posts_do(rpc, answers))
    assert wait_until(lambda: running_calls(rpc, redis_server) == 1)
    rpc.server.cancel(rpc.session.id, 2)
    call.join(5)
    assert answers == []  # a cancelled request gets no response
    assert wait_until(lambda: running_calls(rpc, redis_server) == 0)

"""InflightCalls: a finished call's answer counts as being stored until its store returns or fails."""

from __future__ import annotations

import time

import gevent
import pytest
from gevent.event import Event

from flask_mcp_gevent.worker_calls import InflightCalls

ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_the_wait_for_answers_ends_once_the_answer_being_stored_is_stored():
    calls = InflightCalls()
    stored = Event()
    storing = gevent.spawn(calls.store_answer, lambda answer: stored.wait(), ANSWER)
    gevent.sleep(0)
    assert calls.answers_storing == 1
    gevent.spawn_later(0.2, stored.set)
    started = time.monotonic()
    calls.wait_answers_stored(5.0)
    assert 0.1 < time.monotonic() - started < 2.0
    assert calls.answers_storing == 0
    storing.join(1)


def test_an_answer_whose_store_fails_is_not_waited_for():
    calls = InflightCalls()

    def unencodable(answer):
        raise TypeError("Type is not JSON serializable: object")

    with pytest.raises(TypeError):
        calls.store_answer(unencodable, ANSWER)
    assert calls.answers_storing == 0  # the drain does not wait for it

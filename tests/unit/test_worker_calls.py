"""InflightCalls.storing_answer: a finished call's answer counts as being stored until its store returns or fails."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import gevent
import pytest
from gevent.event import Event

from flask_mcp_gevent.worker_calls import InflightCalls

ANSWER = {"jsonrpc": "2.0", "id": 7, "result": {}}


def store_answer(calls: InflightCalls, store: Callable[[Any], Any], answer: Any) -> Any:
    """Store a finished call's answer as Server.deliver does: counted by calls while store runs."""
    with calls.storing_answer():
        return store(answer)


def test_the_wait_for_answers_ends_once_the_answer_being_stored_is_stored():
    calls = InflightCalls()
    stored = Event()
    storing = gevent.spawn(store_answer, calls, lambda answer: stored.wait(), ANSWER)
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
        store_answer(calls, unencodable, ANSWER)
    assert calls.answers_storing == 0  # the drain does not wait for it

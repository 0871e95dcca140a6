"""InflightCalls: a finished call's answer counts as being stored until its store returns or fails; a cancel stops
the request it names, and nothing its greenlet does once that request is over."""

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


class ConnectionGreenlet:
    """A connection's greenlet as Server.run_here uses it: one request registered, then what it does after."""

    def __init__(self, calls: InflightCalls) -> None:
        self.calls = calls
        self.request_over = Event()
        self.next_request = Event()
        self.stopped_in: list[str] = []
        self.greenlet = gevent.spawn(self.run)

    def run(self) -> None:
        try:
            self.calls.add("s", 7, gevent.getcurrent())
            self.request_over.wait()
        except gevent.GreenletExit:
            self.stopped_in.append("the request")
            return
        finally:
            self.calls.discard("s", 7, gevent.getcurrent())
        try:
            self.next_request.wait()  # the connection's next request (or its answer's write)
        except gevent.GreenletExit:
            self.stopped_in.append("what came after")


def test_a_cancel_stops_the_request_running_in_a_connections_own_greenlet():
    calls = InflightCalls()
    connection = ConnectionGreenlet(calls)
    gevent.sleep(0)
    assert calls.cancel("s", 7) is True
    connection.greenlet.join(timeout=5)
    assert connection.stopped_in == ["the request"] and len(calls) == 0


def test_a_cancel_that_arrives_as_the_request_ends_leaves_what_the_greenlet_does_next_alone():
    calls = InflightCalls()
    connection = ConnectionGreenlet(calls)
    gevent.sleep(0)
    # The request ends first (its wake-up is queued before the cancel's turn), and the greenlet goes on.
    connection.request_over.set()
    assert calls.cancel("s", 7) is True
    gevent.sleep(0.05)
    connection.next_request.set()
    connection.greenlet.join(timeout=5)
    assert connection.stopped_in == []


def test_a_cancel_before_the_request_started_keeps_it_from_starting_and_forgets_it():
    calls = InflightCalls()
    ran = []
    greenlet = gevent.Greenlet(ran.append, "ran")
    calls.add("s", 7, greenlet)
    greenlet.start()
    assert calls.cancel("s", 7) is True
    gevent.sleep(0.05)
    assert ran == [] and greenlet.dead and len(calls) == 0
    assert calls.cancel("s", 7) is False

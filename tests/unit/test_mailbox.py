"""Mailbox: the per-stream queue; FIFO, bounded waits, woken by writers, clean after a killed reader."""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.mailbox import Empty, Mailbox


def test_items_come_out_in_the_order_they_went_in():
    box = Mailbox()
    for n in range(3):
        box.put_nowait(n)
    assert box.qsize() == 3
    assert [box.get(0.1) for _ in range(3)] == [0, 1, 2]


def test_get_raises_empty_after_its_timeout():
    box = Mailbox()
    with gevent.Timeout(2.0):
        with pytest.raises(Empty):
            box.get(0.05)
    assert box.waiter is None


def test_get_nowait_raises_empty_when_there_is_nothing():
    with pytest.raises(Empty):
        Mailbox().get_nowait()


def test_a_waiting_reader_wakes_when_another_greenlet_puts():
    box = Mailbox()
    reader = gevent.spawn(box.get, 5.0)
    gevent.sleep(0.01)
    assert box.waiter is not None
    box.put_nowait("hello")
    assert reader.get(timeout=2.0) == "hello"
    assert box.waiter is None


def test_a_killed_reader_leaves_no_waiter_and_later_items_are_kept():
    box = Mailbox()
    reader = gevent.spawn(box.get, 5.0)
    gevent.sleep(0.01)
    reader.kill()
    assert box.waiter is None
    box.put_nowait("later")
    assert box.get(0.1) == "later"


def test_a_put_racing_the_timeout_is_not_lost():
    box = Mailbox()
    reader = gevent.spawn(box.get, 0.02)
    gevent.sleep(0.02)
    box.put_nowait("late")
    reader.join(timeout=2.0)
    if isinstance(reader.exception, Empty):
        assert box.get(0.1) == "late"  # the reader timed out first: the item waits for the next read
    else:
        assert reader.value == "late" and box.qsize() == 0


def test_a_mailbox_holds_a_deque_only_while_items_wait():
    box = Mailbox()
    assert box.items is None  # an idle stream's mailbox: no 64-slot block
    box.put_nowait("a")
    box.put_nowait("b")
    assert box.get(0.1) == "a" and box.items is not None
    assert box.get_nowait() == "b"
    assert box.items is None and box.qsize() == 0


def test_clear_drops_every_waiting_item():
    box = Mailbox()
    box.put_nowait("dropped")
    box.clear()
    assert box.qsize() == 0
    with pytest.raises(Empty):
        box.get_nowait()

"""Mailbox: the queue between a store and one stream, small for idle streams (0.7 KiB empty; gevent's SimpleQueue: 2.4).

One reader, any number of writers; put never blocks (the store bounds the length itself).
"""

from __future__ import annotations

from collections import deque
from typing import Any

from gevent import get_hub
from gevent.hub import Waiter
from gevent.queue import Empty

__all__ = ["Empty", "Mailbox"]


class Mailbox:
    """A deque, plus the Waiter of the one greenlet blocked reading it."""

    __slots__ = ("items", "waiter")

    def __init__(self) -> None:
        self.items: deque[Any] = deque()
        self.waiter: Waiter | None = None

    def qsize(self) -> int:
        """How many items wait to be read."""
        return len(self.items)

    def put_nowait(self, item: Any) -> None:
        """Append an item and wake the reader, if one waits (from the store: a writer may not switch)."""
        self.items.append(item)
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            get_hub().loop.run_callback(waiter.switch, None)

    def get_nowait(self) -> Any:
        """Take the oldest item; raise Empty when there is none."""
        if self.items:
            return self.items.popleft()
        raise Empty

    def get(self, timeout: float) -> Any:
        """Take the oldest item, waiting up to timeout seconds; raise Empty when none came."""
        if self.items:
            return self.items.popleft()
        waiter = Waiter()
        self.waiter = waiter
        timer = get_hub().loop.timer(timeout)
        timer.start(waiter.switch, None)
        try:
            waiter.get()
        finally:
            timer.close()
            if self.waiter is waiter:
                self.waiter = None
        if self.items:
            return self.items.popleft()
        raise Empty

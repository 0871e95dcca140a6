"""Mailbox: the queue between a store and one stream, small for idle streams (48 bytes empty; gevent's Queue: 2.4 KiB).

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
    """A deque while items wait (None while none do), plus the Waiter of the one greenlet blocked reading it."""

    __slots__ = ("items", "waiter")

    def __init__(self) -> None:
        # Made by the first put and dropped by the read that empties it: most streams wait with nothing queued,
        # and even an empty deque holds a 64-slot block (0.7 KiB per idle stream).
        self.items: deque[Any] | None = None
        self.waiter: Waiter | None = None

    def qsize(self) -> int:
        """How many items wait to be read."""
        return len(self.items) if self.items is not None else 0

    def put_nowait(self, item: Any) -> None:
        """Append an item and wake the reader, if one waits (from the store: a writer may not switch)."""
        if self.items is None:
            self.items = deque()
        self.items.append(item)
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            get_hub().loop.run_callback(waiter.switch, None)

    def clear(self) -> None:
        """Drop every waiting item."""
        self.items = None

    def get_nowait(self) -> Any:
        """Take the oldest item; raise Empty when there is none."""
        items = self.items
        if items is None:
            raise Empty
        return self.take(items)

    def get(self, timeout: float) -> Any:
        """Take the oldest item, waiting up to timeout seconds; raise Empty when none came."""
        items = self.items
        if items is not None:
            return self.take(items)
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
        items = self.items
        if items is not None:
            return self.take(items)
        raise Empty

    def take(self, items: deque[Any]) -> Any:
        """The oldest of items (this mailbox's deque, never empty); the deque goes with its last item."""
        item = items.popleft()
        if not items:
            self.items = None
        return item

"""Bounded waits: poll a condition until it holds or a generous deadline passes, never sleep and hope."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import gevent
import httpx

__all__ = ["POLL_S", "WAIT_S", "kill_redis_clients", "wait_answering", "wait_until", "wait_until_async"]

# Generous: only a failing test waits this long.
WAIT_S = 15.0
POLL_S = 0.02


def wait_until(predicate: Callable[[], Any], timeout: float = WAIT_S, what: str = "the condition",
               interval: float = POLL_S) -> Any:
    """Poll predicate until it is truthy and return its value; fail naming what if timeout passes first.

    It sleeps with gevent, so the store's greenlets of an in-process test keep running; in a plain thread
    it is an ordinary sleep.
    """
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        gevent.sleep(interval)
    return value


def kill_redis_clients(admin: Any, what: str, **filters: Any) -> int:
    """CLIENT KILL by filters until it has killed a connection; how many it killed.

    A connection that has sent SUBSCRIBE is of type pubsub only once Redis has run it: a single kill right after
    may find nothing, and the test would then check a disconnect that never happened.
    """
    return int(wait_until(lambda: admin.client_kill_filter(**filters), what=what))


async def wait_until_async(condition: Callable[[], Any], what: str, timeout: float = WAIT_S,
                           interval: float = POLL_S) -> Any:
    """wait_until for async tests (the SDK clients): the event loop keeps running while it polls."""
    with anyio.move_on_after(timeout):
        while not (value := condition()):
            await anyio.sleep(interval)
        return value
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def wait_answering(url: str, timeout: float = 30.0) -> None:
    """Poll url until it answers 200 (a server that just started), failing after timeout."""

    def answers() -> bool:
        try:
            return httpx.get(url, timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(answers, timeout, f"{url} to answer 200", interval=0.1)

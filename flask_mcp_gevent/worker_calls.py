"""What one worker holds whatever the store: the calls it runs (to cancel them) and the answers its tools await."""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Iterator
from typing import Any

import gevent
from gevent.event import AsyncResult

__all__ = ["InflightCalls", "PendingRequests"]

# How often a shutdown looks whether the calls it waits for have finished (and their answers are stored).
FINISH_POLL_S = 0.05


class InflightCalls:
    """The requests this worker is running, by (session id, request id), to cancel them; and finished ones' answers
    still being stored, for the drain to wait for."""

    def __init__(self) -> None:
        self._calls: dict[tuple[str, Any], gevent.Greenlet] = {}
        # Finished calls whose answers are still being stored (a legacy answer retried through a Redis outage).
        self.answers_storing = 0

    def add(self, session_id: str, request_id: Any, greenlet: gevent.Greenlet) -> None:
        """Remember a running request."""
        self._calls[(session_id, request_id)] = greenlet

    def discard(self, session_id: str, request_id: Any, greenlet: gevent.Greenlet | None = None) -> None:
        """Forget a request that finished (only if it is still the same greenlet)."""
        key = (session_id, request_id)
        if greenlet is None or self._calls.get(key) is greenlet:
            self._calls.pop(key, None)

    def cancel(self, session_id: str, request_id: Any) -> bool:
        """Stop a running request (GreenletExit: it ends without an answer); return whether one was running here."""
        greenlet = self._calls.get((session_id, request_id))
        if greenlet is None or greenlet.dead:
            self._calls.pop((session_id, request_id), None)
            return False
        self.stop(session_id, request_id, greenlet, gevent.GreenletExit)
        return True

    def stop(self, session_id: str, request_id: Any, greenlet: gevent.Greenlet, exception: type[BaseException]
             ) -> None:
        """Raise exception in the request's greenlet, at its next switch, if that greenlet still runs the request then.

        A request run in its POST's own greenlet (Server.run_here) is over while the greenlet lives on: gevent's kill,
        thrown a moment later, would land in whatever the greenlet does next (its answer's write, the connection's
        next request).
        """
        key = (session_id, request_id)
        if greenlet.gr_frame is None:
            # Not running yet (or over): gevent's kill keeps it from starting, and it never gets to forget itself.
            self._calls.pop(key, None)
            greenlet.kill(exception, block=False)
            return
        gevent.get_hub().loop.run_callback(self.throw_if_running, key, greenlet, exception)

    def throw_if_running(self, key: tuple[str, Any], greenlet: gevent.Greenlet, exception: type[BaseException]
                         ) -> None:
        """In the hub: raise exception in greenlet if it still runs the request of key."""
        if self.holds(*key, greenlet):
            greenlet.throw(exception)

    def holds(self, session_id: str, request_id: Any, greenlet: gevent.Greenlet) -> bool:
        """Whether that request is still running in that greenlet (a POST's own greenlet outlives its request)."""
        return not greenlet.dead and self._calls.get((session_id, request_id)) is greenlet

    def wait_finished(self, calls: list[tuple[str, Any, gevent.Greenlet]], timeout: float) -> None:
        """Wait up to timeout seconds until none of calls is still running."""
        deadline = time.monotonic() + timeout
        while any(self.holds(*call) for call in calls) and time.monotonic() < deadline:
            gevent.sleep(min(FINISH_POLL_S, max(0.0, deadline - time.monotonic())))

    @contextlib.contextmanager
    def storing_answer(self) -> Iterator[None]:
        """Count a finished call's answer while it is stored: the drain waits for it, and never stops it."""
        self.answers_storing += 1
        try:
            yield
        finally:
            self.answers_storing -= 1

    def wait_answers_stored(self, timeout: float) -> None:
        """Wait up to timeout seconds until no finished call's answer is still being stored."""
        deadline = time.monotonic() + timeout
        while self.answers_storing and time.monotonic() < deadline:
            gevent.sleep(min(FINISH_POLL_S, max(0.0, deadline - time.monotonic())))

    def running(self) -> list[tuple[str, Any, gevent.Greenlet]]:
        """Every request running here, as (session id, request id, greenlet)."""
        return [(session_id, request_id, greenlet) for (session_id, request_id), greenlet in self._calls.items()]

    def __len__(self) -> int:
        return len(self._calls)


class PendingRequests:
    """Server-to-client requests waiting for the client's answer, in this worker."""

    def __init__(self) -> None:
        self._waiting: dict[tuple[str, Any], AsyncResult] = {}

    def open(self, session_id: str) -> tuple[str, AsyncResult]:
        """Reserve a fresh request id and the result its answer will fill."""
        request_id = "srv-" + secrets.token_hex(8)
        result = AsyncResult()
        self._waiting[(session_id, request_id)] = result
        return request_id, result

    def resolve(self, session_id: str, response: dict[str, Any]) -> bool:
        """Hand a client's answer to the waiting tool; False if nobody here waits for it."""
        request_id = response.get("id")
        if not isinstance(request_id, str):
            return False  # not one of ours: they are all strings
        result = self._waiting.pop((session_id, request_id), None)
        if result is None:
            return False
        result.set(response)
        return True

    def forget(self, session_id: str, request_id: str) -> None:
        """Stop waiting for an answer."""
        self._waiting.pop((session_id, request_id), None)

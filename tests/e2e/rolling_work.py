"""The open work the rolling-restart test keeps going while hosts stop, start and reload: the common parts.

Each kind of work is an `OpenWork`: `start()` opens it, `pump(tick)` adds one unit of traffic that must arrive
exactly once, `before_stop(host)` puts calls in flight on the host about to go, `after_restart()` waits for
those calls' outcomes, `check()` counts. The kinds are in rolling_sessions.py (legacy SSE, Streamable HTTP)
and rolling_listen.py (2026-07-28 listen streams); a new kind (the tasks extension's running tasks, say) is
one more subclass with these five methods, added to WORK_KINDS in test_rolling_restart.py.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from tests.e2e.rolling_balancer import Balancer, http_client
from tests.e2e.server_process import ServerProcess

__all__ = ["JOIN_S", "LONG_MS", "SHORT_MS", "SHUTDOWN_CODE", "InFlight", "OpenWork", "assert_each_once"]

# A call that ends well inside the grace a stopping worker gives (half of MCP_GRACEFUL_TIMEOUT_S), and
# one that cannot: it is stopped and answered with the documented error.
SHORT_MS = 600
LONG_MS = 60000
SHUTDOWN_CODE = -32004
JOIN_S = 30.0


class OpenWork:
    """One kind of work kept open across the restarts (see the module docstring)."""

    def __init__(self, balancer: Balancer) -> None:
        self.balancer = balancer
        self.http = http_client()
        self.in_flight: list[InFlight] = []

    def start(self) -> None:
        """Open the sessions and streams."""

    def pump(self, tick: int) -> None:
        """Send one unit of traffic that must arrive exactly once."""

    def before_stop(self, host: ServerProcess) -> None:
        """Put calls in flight on host, which is about to stop or reload."""

    def after_restart(self) -> None:
        """Wait until the calls put in flight have their outcome."""
        for call in self.in_flight:
            call.join()

    def check(self) -> None:
        """Assert the exact counts."""
        for call in self.in_flight:
            call.check()

    def summary(self) -> str:
        """What was counted, for the test's output (pytest -s)."""
        finished = sum(1 for call in self.in_flight if call.ms == SHORT_MS)
        return f"{type(self).__name__}: calls in flight {finished} finished, {len(self.in_flight) - finished} stopped"

    def close(self) -> None:
        """Let go of every connection."""
        self.http.close()


class InFlight:
    """One slow call on its own thread: its outcome is the response it finally got, however it came."""

    def __init__(self, name: str, ms: int, run) -> None:
        self.name = name
        self.ms = ms
        self.responses: list[Any] = []
        self.failure: BaseException | None = None
        self.started = threading.Event()
        self.thread = threading.Thread(target=self.guarded, args=(run,), name=name, daemon=True)
        self.thread.start()

    def guarded(self, run) -> None:
        """Run the call, keeping any failure for check()."""
        try:
            run(self)
        except BaseException as failure:  # noqa: BLE001 - reported by check()
            self.failure = failure
        finally:
            self.started.set()

    def join(self) -> None:
        """Wait for the outcome (bounded)."""
        self.thread.join(JOIN_S)
        assert not self.thread.is_alive(), f"{self.name}: no outcome within {JOIN_S} s"

    def check(self) -> None:
        """Exactly one response: the result when the call fits the grace, else the shutdown error."""
        assert self.failure is None, f"{self.name}: {self.failure!r}"
        assert len(self.responses) == 1, f"{self.name}: {self.responses}"
        answer = self.responses[0]
        if self.ms == SHORT_MS:
            assert answer.get("result", {}).get("structuredContent") == {"result": f"slept {self.ms} ms"}, \
                (self.name, answer)
        else:
            assert answer.get("error", {}).get("code") == SHUTDOWN_CODE, (self.name, answer)
            assert "Server shutting down" in answer["error"]["message"], (self.name, answer)


def assert_each_once(found: list[Any], expected: list[Any], what: str) -> None:
    """found holds every expected item exactly once, and nothing else."""
    counts = Counter(found)
    repeated = {item: n for item, n in counts.items() if n > 1}
    assert not repeated, f"{what} repeated: {repeated}"
    missing, extra = set(expected) - set(counts), set(counts) - set(expected)
    assert not missing and not extra, f"{what}: missing {sorted(missing, key=str)}, extra {sorted(extra, key=str)}"

"""A task of the tasks extension (MCP 2026-07-28) as stored: its state, its lease, its texts, and the rules of its
changes, written once here; the store stores it (tasks/store.py, tasks/redis_store.py) as it stores a session
(session.py).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace

__all__ = ["CANCELLED", "COMPLETED", "FAILED", "INPUT_REQUIRED", "TERMINAL", "WORKING", "TaskRecord", "now_ms"]

WORKING = "working"
INPUT_REQUIRED = "input_required"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})


def now_ms() -> int:
    """Wall-clock milliseconds (tasks carry ISO timestamps, and their TTL runs on every host's clock)."""
    return int(time.time() * 1000)


@dataclass
class TaskRecord:
    """One task as stored: its state, its lease, the JSON texts of what it runs and produced, and the rules of its
    changes (each changes the record in place and says whether it changed it)."""

    task_id: str
    principal: str | None
    status: str
    created_ms: int
    updated_ms: int
    ttl_ms: int
    # The tools/call it runs (name, arguments, the names of the client's capabilities, the tool's round state),
    # as JSON (tasks/request.py).
    request: str = "{}"
    status_message: str = ""
    # While working: the worker running it and until when its lease holds (ms); "" and 0 otherwise.
    lease_owner: str = ""
    lease_until_ms: int = 0
    # key -> JSON: the questions the task waits on, and every answer given over its life.
    asks: dict[str, str] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    result: str = ""
    error: str = ""
    # How many changes the stored task has seen: a change is stored only over the version it read.
    version: int = 0

    @property
    def expires_ms(self) -> int:
        """When the task and its result are gone."""
        return self.created_ms + self.ttl_ms

    def open_asks(self) -> dict[str, str]:
        """The questions not answered yet."""
        return {key: ask for key, ask in self.asks.items() if key not in self.answers}

    def copy(self) -> TaskRecord:
        """A copy whose dicts are its own."""
        return replace(self, asks=dict(self.asks), answers=dict(self.answers))

    def size(self) -> int:
        """The bytes its texts take in this process (a wide character widens its whole string)."""
        return sum(map(sys.getsizeof, (self.request, self.status_message, self.result, self.error, *self.asks,
                                       *self.asks.values(), *self.answers, *self.answers.values())))

    def held_by(self, worker: str) -> bool:
        """Whether worker runs the task: it is working and worker holds its lease."""
        return self.status == WORKING and self.lease_owner == worker

    def end_lease(self, now: int) -> None:
        """No worker runs the task any more (it changed at now)."""
        self.lease_owner, self.lease_until_ms, self.updated_ms = "", 0, now

    def lapse(self, now: int, lapsed: tuple[str, str]) -> bool:
        """Fail a working task whose lease ran out, with lapsed's (statusMessage, JSON error)."""
        if self.status != WORKING or self.lease_until_ms >= now:
            return False
        self.status, (self.status_message, self.error) = FAILED, lapsed
        self.end_lease(now)
        return True

    def take_answers(self, answers: dict[str, str], worker: str, lease_until: int, now: int) -> bool:
        """Keep the answers to open questions (others are ignored); once none is left open, worker runs it again."""
        if self.status != INPUT_REQUIRED:
            return False
        open_asks = self.open_asks()
        self.answers.update({key: value for key, value in answers.items() if key in open_asks})
        self.updated_ms = now
        if not self.open_asks():
            self.asks = {}
            self.status, self.lease_owner, self.lease_until_ms = WORKING, worker, lease_until
        return True

    def park(self, worker: str, asks: dict[str, str], now: int) -> bool:
        """Make worker's working task wait for these questions (input_required)."""
        if not self.held_by(worker):
            return False
        self.asks.update(asks)
        self.status = INPUT_REQUIRED
        self.end_lease(now)
        return True

    def finish(self, worker: str, status: str, now: int, result: str, error: str, message: str) -> bool:
        """End worker's working task (completed or failed) with a result or an error."""
        if not self.held_by(worker):
            return False
        self.status, self.result, self.error, self.status_message = status, result, error, message
        self.end_lease(now)
        return True

    def cancel(self, message: str, now: int) -> bool:
        """Cancel a task not yet ended."""
        if self.status in TERMINAL:
            return False
        self.status, self.status_message = CANCELLED, message
        self.end_lease(now)
        return True

    def renew(self, worker: str, lease_until: int) -> bool:
        """Extend worker's lease on its working task."""
        if not self.held_by(worker):
            return False
        self.lease_until_ms = lease_until
        return True

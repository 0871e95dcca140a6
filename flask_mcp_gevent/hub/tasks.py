"""Task storage for the tasks extension (MCP 2026-07-28): the record, the store's contract, the in-memory store.

A task is stored under its principal: a lookup names both, so another principal's id is simply unknown.
Every change is one atomic step that checks the state it starts from (only the worker holding a task's lease
may park or finish it; only a task waiting for input takes answers), so two workers never both win.
Payloads (the request, questions, answers, result, error) are JSON text the store never reads.
The Redis store (hub/redis_tasks.py) keeps the same contract with Lua scripts.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace

__all__ = ["CANCELLED", "COMPLETED", "FAILED", "INPUT_REQUIRED", "TERMINAL", "WORKING", "MemoryTaskStore", "TaskRecord",
           "TaskStore", "now_ms"]

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
    """One task as stored: its state, its lease, and the JSON texts of what it runs and what it produced."""

    task_id: str
    principal: str | None
    status: str
    created_ms: int
    updated_ms: int
    ttl_ms: int
    # The tools/call it runs (name, arguments, the names of the client's capabilities, the tool's round state),
    # as JSON (protocol/task_request.py).
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

    @property
    def expires_ms(self) -> int:
        """When the task and its result are gone."""
        return self.created_ms + self.ttl_ms

    def open_asks(self) -> dict[str, str]:
        """The questions not answered yet."""
        return {key: ask for key, ask in self.asks.items() if key not in self.answers}


class TaskStore(ABC):
    """Where tasks live; each method is one atomic step. now is wall-clock ms (see now_ms)."""

    def now(self) -> int:
        """The store's clock, in ms: what callers pass as now."""
        return now_ms()

    @abstractmethod
    def create(self, record: TaskRecord, limit: int) -> bool:
        """Store a new task; False when its principal already holds limit unexpired tasks."""

    @abstractmethod
    def get(self, principal: str | None, task_id: str, now: int, lapsed: tuple[str, str]) -> tuple[
            TaskRecord | None, bool]:
        """(the task or None, whether this read failed it): a working task whose lease ran out becomes failed.

        lapsed is the (statusMessage, JSON error) such a task gets.
        """

    @abstractmethod
    def answer(self, principal: str | None, task_id: str, answers: dict[str, str], worker: str, lease_until: int,
               now: int) -> bool:
        """Keep the answers to open questions (others are ignored); True when none is left open and the task,
        working again, is now worker's to run (until lease_until)."""

    @abstractmethod
    def park(self, principal: str | None, task_id: str, worker: str, asks: dict[str, str], now: int) -> bool:
        """Worker's working task waits for these questions (input_required); False if it is no longer worker's."""

    @abstractmethod
    def finish(self, principal: str | None, task_id: str, worker: str, status: str, now: int, *, result: str = "",
               error: str = "", message: str = "") -> bool:
        """End worker's working task (completed or failed); False if it is no longer worker's to end."""

    @abstractmethod
    def cancel(self, principal: str | None, task_id: str, message: str, now: int) -> bool | None:
        """Cancel a task not yet ended: True if cancelled now, False if it had ended, None if unknown."""

    @abstractmethod
    def renew(self, principal: str | None, task_id: str, worker: str, lease_until: int) -> bool:
        """Extend worker's lease; False when the task is no longer worker's and working (cancelled, lapsed, gone)."""


class MemoryTaskStore(TaskStore):
    """Tasks in a dict, for the in-memory hub (one worker); a lock makes each step atomic across threads too."""

    def __init__(self, clock: Callable[[], int] = now_ms) -> None:
        self.clock = clock
        self.tasks: dict[tuple[str | None, str], TaskRecord] = {}
        self.lock = threading.Lock()

    def now(self) -> int:
        """The store's clock (a test's, when it gave one)."""
        return self.clock()

    def _live(self, principal: str | None, task_id: str) -> TaskRecord | None:
        """The stored task, None when unknown or past its TTL (then dropped)."""
        record = self.tasks.get((principal, task_id))
        if record is not None and record.expires_ms <= self.clock():
            del self.tasks[(principal, task_id)]
            return None
        return record

    def create(self, record: TaskRecord, limit: int) -> bool:
        """Store a new task unless its principal holds limit unexpired ones (every expired one is dropped first)."""
        with self.lock:
            for principal, task_id in list(self.tasks):
                self._live(principal, task_id)
            held = sum(1 for principal, _ in self.tasks if principal == record.principal)
            if held >= limit:
                return False
            self.tasks[(record.principal, record.task_id)] = replace(record, asks=dict(record.asks),
                                                                    answers=dict(record.answers))
            return True

    def get(self, principal: str | None, task_id: str, now: int, lapsed: tuple[str, str]) -> tuple[
            TaskRecord | None, bool]:
        """A copy of the task; a working one whose lease ran out is failed first."""
        with self.lock:
            record = self._live(principal, task_id)
            if record is None:
                return None, False
            failed_now = record.status == WORKING and record.lease_until_ms < now
            if failed_now:
                record.status, record.status_message, record.error = FAILED, lapsed[0], lapsed[1]
                record.lease_owner, record.lease_until_ms, record.updated_ms = "", 0, now
            return replace(record, asks=dict(record.asks), answers=dict(record.answers)), failed_now

    def answer(self, principal: str | None, task_id: str, answers: dict[str, str], worker: str, lease_until: int,
               now: int) -> bool:
        """Keep answers to open questions; resume the task on worker when none is left."""
        with self.lock:
            record = self._live(principal, task_id)
            if record is None or record.status != INPUT_REQUIRED:
                return False
            record.answers.update({key: value for key, value in answers.items() if key in record.open_asks()})
            record.updated_ms = now
            if record.open_asks():
                return False
            record.asks = {}
            record.status, record.lease_owner, record.lease_until_ms = WORKING, worker, lease_until
            return True

    def park(self, principal: str | None, task_id: str, worker: str, asks: dict[str, str], now: int) -> bool:
        """Move worker's working task to input_required with these questions."""
        with self.lock:
            record = self._live(principal, task_id)
            if record is None or record.status != WORKING or record.lease_owner != worker:
                return False
            record.asks.update(asks)
            record.status, record.lease_owner, record.lease_until_ms, record.updated_ms = INPUT_REQUIRED, "", 0, now
            return True

    def finish(self, principal: str | None, task_id: str, worker: str, status: str, now: int, *, result: str = "",
               error: str = "", message: str = "") -> bool:
        """End worker's working task with a result or an error."""
        with self.lock:
            record = self._live(principal, task_id)
            if record is None or record.status != WORKING or record.lease_owner != worker:
                return False
            record.status, record.result, record.error, record.status_message = status, result, error, message
            record.lease_owner, record.lease_until_ms, record.updated_ms = "", 0, now
            return True

    def cancel(self, principal: str | None, task_id: str, message: str, now: int) -> bool | None:
        """Cancel a task that has not ended."""
        with self.lock:
            record = self._live(principal, task_id)
            if record is None:
                return None
            if record.status in TERMINAL:
                return False
            record.status, record.status_message, record.updated_ms = CANCELLED, message, now
            record.lease_owner, record.lease_until_ms = "", 0
            return True

    def renew(self, principal: str | None, task_id: str, worker: str, lease_until: int) -> bool:
        """Extend the lease of worker's working task."""
        with self.lock:
            record = self._live(principal, task_id)
            if record is None or record.status != WORKING or record.lease_owner != worker:
                return False
            record.lease_until_ms = lease_until
            return True

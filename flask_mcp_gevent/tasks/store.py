"""Task storage for the tasks extension: the store's contract and the in-memory store (tasks/redis_store.py for Redis).

A task is stored under its principal: a lookup names both, so another principal's id is simply unknown. Every change
is a rule of TaskRecord's (tasks/record.py) applied to the task as read, and stored only if the task is still at the
version read; one that lost that race reads the task again and re-applies its rule, so two workers never both win.
A backend provides the atomic steps: load, store-if-unchanged, create within the principal's limit. Payloads (the
request, questions, answers, result, error) are JSON text the store never reads.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.tasks.record import WORKING, TaskRecord, now_ms

__all__ = ["MemoryTaskStore", "TaskStore"]

# Reads of a task a change makes before it gives up: each lost race means another change landed in between, and a
# task takes few (a renewal every third of a lease, an answer, its end).
MAX_ATTEMPTS = 16
# What the memory store counts for a record beyond its texts (the object, its dicts, its key, its id), so that a
# bound in bytes bounds many small tasks too (measured with tracemalloc: about 550 bytes without questions).
RECORD_BYTES = 1024


class TaskStore(ABC):
    """Where tasks live; each public method is one atomic step. now is wall-clock ms (see now_ms)."""

    def now(self) -> int:
        """The store's clock, in ms: what callers pass as now."""
        return now_ms()

    @abstractmethod
    def create(self, record: TaskRecord, limit: int) -> bool:
        """Store a new task; False when its principal already holds limit unexpired tasks or has_room says no."""

    def has_room(self, record: TaskRecord) -> bool:
        """Whether the store as a whole may keep one more task like record (no bound but the principal's here)."""
        return True

    @abstractmethod
    def load(self, principal: str | None, task_id: str) -> TaskRecord | None:
        """The stored task with its version (a copy the caller may change); None when unknown or expired."""

    @abstractmethod
    def save(self, record: TaskRecord) -> bool:
        """Store the changed record, one version on, unless the stored task is no longer at record.version."""

    def change(self, principal: str | None, task_id: str, rule: Callable[[TaskRecord], bool]) -> tuple[
            TaskRecord | None, bool]:
        """(the task as rule left it, None when unknown; whether rule changed it), re-read after a lost race."""
        for _ in range(MAX_ATTEMPTS):
            record = self.load(principal, task_id)
            if record is None:
                return None, False
            changed = rule(record)
            if not changed or self.save(record):
                return record, changed
        raise StoreUnavailable(f"task {task_id[:8]} changed under {MAX_ATTEMPTS} changes in a row; try again")

    def get(self, principal: str | None, task_id: str, now: int, lapsed: tuple[str, str]) -> tuple[
            TaskRecord | None, bool]:
        """(the task or None, whether this read failed it): a lapsed lease fails it with lapsed (message, error)."""
        return self.change(principal, task_id, lambda record: record.lapse(now, lapsed))

    def answer(self, principal: str | None, task_id: str, answers: dict[str, str], worker: str, lease_until: int,
               now: int) -> bool:
        """Keep answers to open questions; True when none is left and the task is worker's to run (to lease_until)."""
        record, changed = self.change(principal, task_id,
                                      lambda record: record.take_answers(answers, worker, lease_until, now))
        return changed and record is not None and record.status == WORKING

    def park(self, principal: str | None, task_id: str, worker: str, asks: dict[str, str], now: int) -> bool:
        """Worker's working task waits for these questions (input_required); False if it is no longer worker's."""
        return self.change(principal, task_id, lambda record: record.park(worker, asks, now))[1]

    def finish(self, principal: str | None, task_id: str, worker: str, status: str, now: int, *, result: str = "",
               error: str = "", message: str = "") -> bool:
        """End worker's working task (completed or failed); False if it is no longer worker's to end."""
        return self.change(principal, task_id,
                           lambda record: record.finish(worker, status, now, result, error, message))[1]

    def cancel(self, principal: str | None, task_id: str, message: str, now: int) -> bool | None:
        """Cancel a task not yet ended: True if cancelled now, False if it had ended, None if unknown."""
        record, changed = self.change(principal, task_id, lambda record: record.cancel(message, now))
        return None if record is None else changed

    def renew(self, principal: str | None, task_id: str, worker: str, lease_until: int) -> bool:
        """Extend worker's lease; False when the task is no longer worker's and working (cancelled, lapsed, gone)."""
        return self.change(principal, task_id, lambda record: record.renew(worker, lease_until))[1]


class MemoryTaskStore(TaskStore):
    """The in-memory store's tasks in a dict, bounded in bytes; a lock makes each step atomic across threads too."""

    def __init__(self, max_bytes: int, clock: Callable[[], int] = now_ms) -> None:
        self.clock = clock
        self.max_bytes = max_bytes
        self.tasks: dict[tuple[str | None, str], TaskRecord] = {}
        # What the kept tasks take (RECORD_BYTES and their texts each): kept with every change, not summed on create.
        self.held_bytes = 0
        self.lock = threading.Lock()

    def now(self) -> int:
        """The store's clock (a test's, when it gave one)."""
        return self.clock()

    def _live(self, principal: str | None, task_id: str) -> TaskRecord | None:
        """The stored task, None when unknown or past its TTL (then dropped)."""
        record = self.tasks.get((principal, task_id))
        if record is not None and record.expires_ms <= self.clock():
            del self.tasks[(principal, task_id)]
            self.held_bytes -= RECORD_BYTES + record.size()
            return None
        return record

    def has_room(self, record: TaskRecord) -> bool:
        """Whether record fits under MCP_TASKS_MAX_BYTES beside the tasks kept."""
        return self.held_bytes + RECORD_BYTES + record.size() <= self.max_bytes

    def create(self, record: TaskRecord, limit: int) -> bool:
        """Store a new task unless its principal holds limit live ones or it does not fit (expired ones go first)."""
        with self.lock:
            for principal, task_id in list(self.tasks):
                self._live(principal, task_id)
            held = sum(1 for principal, _ in self.tasks if principal == record.principal)
            if held >= limit or not self.has_room(record):
                return False
            self.tasks[(record.principal, record.task_id)] = record.copy()
            self.held_bytes += RECORD_BYTES + record.size()
            return True

    def load(self, principal: str | None, task_id: str) -> TaskRecord | None:
        """A copy of the stored task."""
        with self.lock:
            record = self._live(principal, task_id)
            return None if record is None else record.copy()

    def save(self, record: TaskRecord) -> bool:
        """Replace the stored task with a copy of record unless it changed since record was loaded."""
        with self.lock:
            stored = self._live(record.principal, record.task_id)
            if stored is None or stored.version != record.version:
                return False
            saved = record.copy()
            saved.version += 1
            self.tasks[(record.principal, record.task_id)] = saved
            self.held_bytes += saved.size() - stored.size()
            return True

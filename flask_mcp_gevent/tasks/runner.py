"""Running tasks (the tasks extension) on this worker: create, run, park on a question, finish, renew leases.

A task is stored before its id is sent, then runs in a greenlet of its own that no POST owns. While it runs,
this worker holds its lease and renews it every third of MCP_TASK_LEASE_S; a worker that dies stops renewing,
and the next read of the task fails it (tasks/store.py). Renewing also tells this worker when a task was
cancelled (or failed) elsewhere: its greenlet is then killed. An ask without an answer parks the task
(input_required); when tasks/update answers the last question, the worker that took the answer reruns the
tool from the top with every answer so far, as the multi round-trip rounds do.

A run uses the grants and credentials of the request that started it (the tools/call, or the tasks/update that
answered its last question): they travel with the run in this worker's memory and are never stored with the task.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gevent

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.encoding import dumps, loads, utf8_size
from flask_mcp_gevent.errors import INTERNAL_ERROR, INVALID_PARAMS, SERVER_UNAVAILABLE, RpcError, new_correlation_id
from flask_mcp_gevent.protocol.request_context import STATELESS_ERA, TASK_RUNNING, RequestContext
from flask_mcp_gevent.protocol.tools import run_tool
from flask_mcp_gevent.session import STATELESS, Session
from flask_mcp_gevent.stateless.input_rounds import InputRequired, Rounds
from flask_mcp_gevent.tasks.record import COMPLETED, FAILED, TERMINAL, WORKING, TaskRecord
from flask_mcp_gevent.tasks.request import check_answer_bytes, task_request
from flask_mcp_gevent.tasks.shapes import lapsed, notification
from flask_mcp_gevent.tasks.store import TaskStore

if TYPE_CHECKING:
    from flask_mcp_gevent.auth.principal import Principal
    from flask_mcp_gevent.config import Settings

__all__ = ["SHUTDOWN_MESSAGE", "TaskRunner", "rpc_error"]

log = logging.getLogger("mcp.tasks")

SHUTDOWN_MESSAGE = "The server stopped before this task finished; call the tool again to start over"
TASK_ID_BYTES = 24
# A failed task's statusMessage (and its error's message, when the error is too big to keep) is cut to this.
MAX_MESSAGE_CHARS = 1000


def rpc_error(code: int, message: str, data: Any = None) -> str:
    """A JSON-RPC error object, as the JSON text a task keeps."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return dumps(error).decode()


def kept_error(exc: RpcError, limit: int) -> tuple[str, str]:
    """The (JSON error, statusMessage) a task failed by exc keeps: the whole error within limit bytes, else its
    code and the start of its message."""
    message = exc.message[:MAX_MESSAGE_CHARS]
    error = dumps(exc.to_dict())
    if len(error) > limit:
        error = rpc_error(exc.code, message).encode()
    if len(error) > limit:
        # Wide characters: each takes at most 6 bytes of JSON (a \u escape), the code and the braces under 64.
        message = message[:max(0, (limit - 64) // 6)]
        error = rpc_error(exc.code, message).encode()
    return error.decode(), message


def discard(message: dict[str, Any]) -> None:
    """Where a task's progress and log messages go: nowhere (the extension sends none for tasks)."""


class TaskRunner:
    """This worker's running tasks and the greenlet that renews their leases."""

    def __init__(self, store: TaskStore, settings: Settings, tell: Callable[[dict[str, Any]], None]) -> None:
        """store keeps the tasks (beside the server's store); tell hands a notification to every worker."""
        self.store = store
        self.settings = settings
        self.tell = tell
        # Set by the server once it has built the services every request shares (RequestServices).
        self.services: Any = None
        self.running: dict[tuple[str | None, str], gevent.Greenlet] = {}
        self._pid: int | None = None
        self._worker = ""
        self._renewer: gevent.Greenlet | None = None

    @property
    def worker(self) -> str:
        """This process's lease owner name (a new one after a fork)."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._worker = f"{self._pid}-{secrets.token_hex(6)}"
            self.running = {}
            self._renewer = None
        return self._worker

    @property
    def lease_ms(self) -> int:
        """How long a lease holds without renewal."""
        return int(self.settings.task_lease_s * 1000)

    def ttl_ms(self, params: dict[str, Any]) -> int:
        """The task's TTL: MCP_TASK_TTL_S, or the one a client asked for (a 2025-style task.ttl), at most the max."""
        hint = params.get("task")
        asked = hint.get("ttl") if isinstance(hint, dict) else None
        if type(asked) is int and asked > 0:
            return min(asked, int(self.settings.task_max_ttl_s * 1000))
        return int(self.settings.task_ttl_s * 1000)

    def create(self, ctx: RequestContext, name: str, arguments: Any, answers: dict[str, Any],
               state: Any) -> TaskRecord:
        """Store a new task for this tools/call and start running it; -32602 for a request or answers over their
        bound, -32004 past the principal's limit or the bytes all tasks may take."""
        request = task_request(name, arguments, ctx.session.client_capabilities, ctx.session.protocol_version,
                               state, self.settings.task_max_request_bytes)
        kept_answers = {key: dumps(value).decode() for key, value in answers.items()}
        check_answer_bytes(kept_answers, self.settings.task_max_result_bytes)
        now = self.store.now()
        record = TaskRecord(task_id=secrets.token_urlsafe(TASK_ID_BYTES), principal=ctx.principal, status=WORKING,
                            created_ms=now, updated_ms=now, ttl_ms=self.ttl_ms(ctx.params),
                            request=request, lease_owner=self.worker,
                            lease_until_ms=now + self.lease_ms,
                            answers=kept_answers)
        if not self.store.create(record, self.settings.task_max_per_principal):
            if not self.store.has_room(record):
                raise RpcError(SERVER_UNAVAILABLE, "Too many task bytes kept on this worker: the tasks of every "
                               f"principal may take {self.settings.tasks_max_bytes} bytes (MCP_TASKS_MAX_BYTES), "
                               "counting finished tasks until their TTL ends; try again later")
            raise RpcError(SERVER_UNAVAILABLE, "Too many tasks kept for this principal: the limit is "
                           f"{self.settings.task_max_per_principal} (MCP_TASK_MAX_PER_PRINCIPAL), counting finished "
                           "tasks until their TTL ends; try again later")
        self.start(record, ctx.caller)
        return record

    def start(self, record: TaskRecord, caller: Principal | None) -> None:
        """Run a task this worker holds the lease of, in a greenlet of its own, as caller (the request's)."""
        key = (record.principal, record.task_id)
        self.running[key] = gevent.spawn(self.run, record, caller)
        if self._renewer is None or self._renewer.dead:
            self._renewer = gevent.spawn(self.renew_forever)

    def context(self, record: TaskRecord, request: dict[str, Any], caller: Principal | None) -> RequestContext:
        """The context a task's run gets: the creating request's capabilities, every answer so far, no stream."""
        session = Session(transport=STATELESS, principal=record.principal, protocol_version=request.get("version"),
                          client_capabilities=request.get("capabilities") or {}, initialized=True)
        ctx = RequestContext(self.services, session, discard, None, "tools/call", era=STATELESS_ERA,
                             params={"name": request.get("name"), "arguments": request.get("arguments")},
                             caller=caller)
        ctx.rounds = Rounds(known={key: loads(value) for key, value in record.answers.items()})
        ctx.round_state = request.get("state")
        ctx.task_phase = TASK_RUNNING
        return ctx

    def run(self, record: TaskRecord, caller: Principal | None) -> None:
        """A task's greenlet: run the tool, then park, complete or fail the task (unless it is no longer ours)."""
        try:
            self.run_once(record, caller)
        except StoreUnavailable:
            log.warning("task %s: Redis unreachable; its lease will lapse", record.task_id[:8])
        finally:
            if self.running.get((record.principal, record.task_id)) is gevent.getcurrent():
                del self.running[(record.principal, record.task_id)]

    def run_once(self, record: TaskRecord, caller: Principal | None) -> None:
        """Run the tool once, inside the app's context, and store what came of it."""
        request = loads(record.request)
        tool = self.services.registry.tools.get(request.get("name"))
        if tool is None:
            self.finish(record, FAILED, error=rpc_error(INVALID_PARAMS, "The task's tool no longer exists"),
                        message="The task's tool no longer exists")
            return
        try:
            ctx = self.context(record, request, caller)
            result = self.services.run_in_app(lambda: run_tool(ctx, tool, request.get("arguments")))
        except InputRequired as asked:
            self.park(record, {key: dumps(question).decode() for key, question in asked.requests.items()})
            return
        except RpcError as exc:
            error, message = kept_error(exc, self.settings.task_max_result_bytes)
            self.finish(record, FAILED, error=error, message=message)
            return
        except Exception:  # a bug outside the tool (run_tool answers the tool's own): the task fails, said plainly
            correlation_id = new_correlation_id()
            log.exception("task %s failed (correlation id %s)", record.task_id[:8], correlation_id)
            self.finish(record, FAILED, error=rpc_error(INTERNAL_ERROR, "Internal error",
                                                        {"correlationId": correlation_id}),
                        message=f"Internal error (correlation id {correlation_id})")
            return
        data = dumps(result)
        if not self.fail_past_limit(record, "result", len(data)):
            self.finish(record, COMPLETED, result=data.decode())

    def park(self, record: TaskRecord, asks: dict[str, str]) -> None:
        """Make the task wait for these questions (JSON), unless they are too big to keep."""
        if self.fail_past_limit(record, "questions", sum(utf8_size(ask) for ask in asks.values())):
            return
        if self.store.park(record.principal, record.task_id, self.worker, asks, self.store.now()):
            self.notify(record)

    def fail_past_limit(self, record: TaskRecord, what: str, size: int) -> bool:
        """Fail the task when what it would keep is over MCP_TASK_MAX_RESULT_BYTES; whether it did."""
        limit = self.settings.task_max_result_bytes
        if size <= limit:
            return False
        message = (f"The tool's {what} took {size} bytes, more than a task may keep ({limit} bytes, "
                   "MCP_TASK_MAX_RESULT_BYTES)")
        self.finish(record, FAILED, error=rpc_error(INTERNAL_ERROR, message), message=message)
        return True

    def finish(self, record: TaskRecord, status: str, *, result: str = "", error: str = "",
               message: str = "") -> None:
        """End the task if it is still ours, and tell its listeners."""
        if self.store.finish(record.principal, record.task_id, self.worker, status, self.store.now(), result=result,
                             error=error, message=message):
            self.notify(record)

    def notify(self, record: TaskRecord) -> None:
        """Send notifications/tasks with the task's stored state to the listen streams of the fleet."""
        try:
            current, _ = self.store.get(record.principal, record.task_id, self.store.now(), lapsed())
            if current is not None:
                self.announce(current)
        except StoreUnavailable:
            log.info("could not announce task %s: Redis unreachable", record.task_id[:8])

    def announce(self, record: TaskRecord) -> None:
        """Tell every worker's listen streams of the task's state (its payload only when small: task_shapes)."""
        self.tell(notification(record, self.settings.task_poll_interval_ms,
                               self.settings.task_max_notification_bytes))

    def look_at(self, principal: str | None, task_ids: list[str]) -> set[str]:
        """Read these tasks (a listen stream waits on them); return those of the principal not yet ended.

        A lapsed one fails on the read and is announced. StoreUnavailable is the caller's to handle.
        """
        live: set[str] = set()
        for task_id in task_ids:
            record, failed_now = self.store.get(principal, task_id, self.store.now(), lapsed())
            if record is not None and record.status not in TERMINAL:
                live.add(task_id)
            elif record is not None and failed_now:
                self.announce(record)
        return live

    def stop_here(self, principal: str | None, task_id: str) -> None:
        """Kill the task's greenlet if it runs on this worker (it was cancelled)."""
        greenlet = self.running.pop((principal, task_id), None)
        if greenlet is not None:
            greenlet.kill(block=False)

    def renew_forever(self) -> None:
        """Renew the lease of every task running here, every third of the lease, until none runs."""
        while self.running:
            gevent.sleep(self.settings.task_lease_s / 3)
            self.renew_once()

    def renew_once(self) -> None:
        """One round of renewals; a task no longer ours (cancelled, failed) is stopped."""
        for (principal, task_id), greenlet in list(self.running.items()):
            if greenlet.dead:
                continue
            try:
                ours = self.store.renew(principal, task_id, self.worker, self.store.now() + self.lease_ms)
            except StoreUnavailable:
                log.info("could not renew the lease of task %s: Redis unreachable", task_id[:8])
                continue
            if not ours:
                self.stop_here(principal, task_id)

    def drain(self, timeout: float) -> int:
        """Let running tasks finish within timeout, then stop the rest as failed; returns how many were stopped."""
        running = dict(self.running)
        if not running:
            return 0
        gevent.joinall(list(running.values()), timeout=max(0.0, timeout))
        stopped = 0
        for (principal, task_id), greenlet in running.items():
            if greenlet.dead:
                continue
            greenlet.kill(block=True, timeout=1)
            stopped += 1
            try:
                if self.store.finish(principal, task_id, self.worker, FAILED, self.store.now(),
                                     error=rpc_error(INTERNAL_ERROR, SHUTDOWN_MESSAGE), message=SHUTDOWN_MESSAGE):
                    record, _ = self.store.get(principal, task_id, self.store.now(), lapsed())
                    if record is not None:
                        self.announce(record)
            except StoreUnavailable:
                log.warning("could not fail task %s at shutdown: Redis unreachable; its lease will lapse",
                            task_id[:8])
        if stopped:
            log.info("stopped %d task(s) still running at shutdown", stopped)
        return stopped

"""The tasks extension (`io.modelcontextprotocol/tasks`, MCP 2026-07-28): tools/call as a task, tasks/get,
tasks/update and tasks/cancel.

A tool declares task support with @tool(task="optional" | "required"). On the 2026-07-28 wire, a tools/call
whose clientCapabilities declare the extension gets a CreateTaskResult for such a tool; one that does not runs
an optional tool at once and gets -32021 for a required one. Session-era sessions always run the tool at once
(their tools/call, flask_mcp_gevent.protocol.tools.tools_call, never comes here).
Every tasks/* request must declare the extension too (-32021), and names a task of its own principal: any other
id, another principal's included, is -32602 "Task not found".
"""

from __future__ import annotations

from typing import Any

from jsonrpcserver import Success

from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.errors import INVALID_PARAMS, RpcError
from flask_mcp_gevent.protocol.request_context import TASK_BEFORE, RequestContext
from flask_mcp_gevent.protocol.tools import run_tool
from flask_mcp_gevent.stateless.input_rounds import StartTask, answer_problem, run_rounds
from flask_mcp_gevent.tasks.record import INPUT_REQUIRED, TaskRecord
from flask_mcp_gevent.tasks.request import check_answer_bytes
from flask_mcp_gevent.tasks.runner import TaskRunner
from flask_mcp_gevent.tasks.shapes import created_result, declares_tasks, detailed, lapsed, missing_extension
from flask_mcp_gevent.toolkit.specs import Tool
from flask_mcp_gevent.without_gevent import SERVED, task_needs_gevent

__all__ = ["call_task_tool", "tasks_cancel", "tasks_get", "tasks_update"]

REQUIRED = "required"
MAX_TASK_ID_CHARS = 200
CANCELLED_MESSAGE = "Cancelled by the client"


def runner_of(ctx: RequestContext) -> TaskRunner:
    """This worker's task runner."""
    return ctx.services.tasks


def call_task_tool(ctx: RequestContext, tool: Tool, arguments: Any) -> dict[str, Any]:
    """Run a 2026-07-28 tools/call of a tool with task support: as a task where the request allows one, else at once."""
    def work() -> dict[str, Any]:
        return run_tool(ctx, tool, arguments)

    # A task runs on after its request: on a server that is not gevent's nothing would run it (without_gevent.py).
    without_gevent = SERVED.without_gevent is not None
    if without_gevent or not declares_tasks(ctx.session.client_capabilities):
        if tool.task == REQUIRED:
            raise (task_needs_gevent(tool.name) if without_gevent
                   else missing_extension(f"Tool '{tool.name}' runs only as a task, which"))
        return run_rounds(ctx, work)
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'arguments' must be an object", {"tool": tool.name})
    answers: dict[str, Any] = {}
    state = None
    if tool.ask_before_task:
        ctx.task_phase = TASK_BEFORE
        try:
            return run_rounds(ctx, work)  # finished (or asked) before it became a task: answered at once
        except StartTask as started:
            answers, state = started.answers, started.state
        finally:
            ctx.task_phase = None
    runner = runner_of(ctx)
    record = runner.create(ctx, tool.name, arguments, answers, state)
    return created_result(record, ctx.settings.task_poll_interval_ms)


def task_id_of(ctx: RequestContext, task_id: Any) -> str:
    """The request's taskId, after the extension check: -32021 without it, -32602 unless a short string."""
    if not declares_tasks(ctx.session.client_capabilities):
        raise missing_extension(ctx.method or "tasks/*")
    if not isinstance(task_id, str) or not task_id or len(task_id) > MAX_TASK_ID_CHARS:
        raise RpcError(INVALID_PARAMS, f"Invalid params: 'taskId' must be a non-empty string of at most "
                       f"{MAX_TASK_ID_CHARS} characters")
    return task_id


def load(ctx: RequestContext, task_id: str) -> TaskRecord:
    """The principal's task (its lease checked on the way), or -32602 as for an id that never existed."""
    runner = runner_of(ctx)
    record, failed_now = runner.store.get(ctx.principal, task_id, runner.store.now(), lapsed())
    if record is None:
        raise RpcError(INVALID_PARAMS, "Task not found: no task with this taskId exists for you (it may have "
                       "expired)", {"taskId": task_id[:MAX_TASK_ID_CHARS]})
    if failed_now:
        runner.notify(record)
    return record


def tasks_get(ctx: RequestContext, taskId: Any = None, **_: Any) -> Any:  # noqa: N803 - the wire's name
    """The task's state: inputRequests while input_required, result once completed, error once failed."""
    record = load(ctx, task_id_of(ctx, taskId))
    return Success(detailed(record, ctx.settings.task_poll_interval_ms))


def checked_answers(ctx: RequestContext, record: TaskRecord, responses: Any) -> dict[str, str]:
    """The answers to the task's open questions, as JSON; others are ignored. -32602 for a malformed one."""
    if not isinstance(responses, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'inputResponses' must be an object of answers by key")
    if record.status != INPUT_REQUIRED:
        return {}
    open_asks = record.open_asks()
    accepted = {}
    for key, answer in responses.items():
        if key not in open_asks:
            continue  # never asked, or answered already: ignored, as the extension says
        problem = answer_problem(loads(open_asks[key]).get("method", ""), answer)
        if problem is not None:
            raise RpcError(INVALID_PARAMS, f"Invalid params: inputResponses['{key}'] {problem}",
                           {"inputResponse": key})
        accepted[key] = dumps(answer).decode()
    check_answer_bytes({**record.answers, **accepted}, ctx.settings.task_max_result_bytes)
    return accepted


def tasks_update(ctx: RequestContext, taskId: Any = None, inputResponses: Any = None,  # noqa: N803
                 **_: Any) -> Any:
    """Take answers to the task's open questions; the last one resumes it, on this worker. An empty ack."""
    task_id = task_id_of(ctx, taskId)
    record = load(ctx, task_id)
    accepted = checked_answers(ctx, record, inputResponses)
    if accepted:
        runner = runner_of(ctx)
        now = runner.store.now()
        resumed = runner.store.answer(ctx.principal, task_id, accepted, runner.worker, now + runner.lease_ms, now)
        current = load(ctx, task_id)
        if resumed:
            runner.start(current, ctx.caller)
        runner.notify(current)
    return Success({})


def tasks_cancel(ctx: RequestContext, taskId: Any = None, **_: Any) -> Any:  # noqa: N803
    """Cancel the task (a task already ended stays as it is); an empty ack either way."""
    task_id = task_id_of(ctx, taskId)
    runner = runner_of(ctx)
    outcome = runner.store.cancel(ctx.principal, task_id, CANCELLED_MESSAGE, runner.store.now())
    if outcome is None:
        load(ctx, task_id)  # unknown: the same -32602 as tasks/get
    if outcome:
        runner.stop_here(ctx.principal, task_id)
        runner.notify(load(ctx, task_id))
    return Success({})

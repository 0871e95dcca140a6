"""The tasks extension's wire shapes: CreateTaskResult, DetailedTask, notifications/tasks, and its -32021.

Built from a stored `TaskRecord` (tasks/store.py); nothing here reads or writes the store.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from flask_mcp_gevent.encoding import dumps, loads, utf8_size
from flask_mcp_gevent.errors import INTERNAL_ERROR, MISSING_REQUIRED_CLIENT_CAPABILITY, RpcError
from flask_mcp_gevent.tasks.record import COMPLETED, FAILED, INPUT_REQUIRED, TaskRecord

__all__ = ["NOTIFICATION", "RESULT_TYPE", "TASKS_EXTENSION", "created_result", "declares_tasks", "detailed",
           "lapsed", "missing_extension", "notification", "payload_bytes"]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
RESULT_TYPE = "task"
NOTIFICATION = "notifications/tasks"
LAPSED_MESSAGE = ("The worker running this task stopped before it finished (its lease expired); call the tool "
                  "again to start over")


def declares_tasks(capabilities: object) -> bool:
    """Whether a request's clientCapabilities declare the tasks extension."""
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def missing_extension(what: str) -> RpcError:
    """-32021 naming the extension a request must declare."""
    return RpcError(MISSING_REQUIRED_CLIENT_CAPABILITY,
                    f"{what} needs the {TASKS_EXTENSION} extension: declare it in _meta "
                    "io.modelcontextprotocol/clientCapabilities.extensions",
                    {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})


def lapsed() -> tuple[str, str]:
    """The (statusMessage, JSON error) of a task whose worker stopped renewing its lease."""
    return LAPSED_MESSAGE, dumps({"code": INTERNAL_ERROR, "message": LAPSED_MESSAGE}).decode()


def iso(ms: int) -> str:
    """An ISO 8601 UTC timestamp, to the millisecond."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def task_fields(record: TaskRecord, poll_interval_ms: int) -> dict[str, Any]:
    """The members every Task has."""
    fields: dict[str, Any] = {
        "taskId": record.task_id,
        "status": record.status,
        "createdAt": iso(record.created_ms),
        "lastUpdatedAt": iso(record.updated_ms),
        "ttlMs": int(record.ttl_ms),
        "pollIntervalMs": int(poll_interval_ms),
    }
    if record.status_message:
        fields["statusMessage"] = record.status_message
    return fields


def created_result(record: TaskRecord, poll_interval_ms: int) -> dict[str, Any]:
    """The CreateTaskResult: a flat Result & Task, resultType "task"."""
    return {"resultType": RESULT_TYPE, **task_fields(record, poll_interval_ms)}


def detailed(record: TaskRecord, poll_interval_ms: int) -> dict[str, Any]:
    """The DetailedTask: inputRequests while input_required, result once completed, error once failed."""
    task = task_fields(record, poll_interval_ms)
    if record.status == INPUT_REQUIRED:
        task["inputRequests"] = {key: loads(ask) for key, ask in record.open_asks().items()}
    elif record.status == COMPLETED and record.result:
        task["result"] = loads(record.result)
    elif record.status == FAILED:
        task["error"] = loads(record.error) if record.error else {"code": INTERNAL_ERROR, "message": "Task failed"}
    return task


def payload_bytes(record: TaskRecord) -> int:
    """The bytes of what the DetailedTask inlines for the task's status: inputRequests, result or error."""
    if record.status == INPUT_REQUIRED:
        return sum(utf8_size(ask) for ask in record.open_asks().values())
    if record.status == COMPLETED:
        return utf8_size(record.result)
    if record.status == FAILED:
        return utf8_size(record.error)
    return 0


def notification(record: TaskRecord, poll_interval_ms: int, max_payload_bytes: int) -> dict[str, Any]:
    """notifications/tasks for a task's new state, with its principal beside (listen streams match on it).

    It carries the DetailedTask tasks/get answers, unless what that inlines is over max_payload_bytes: then the
    Task's own fields only (the client reads the rest with tasks/get), so that no listen stream, and no worker
    it is told to, holds a copy of a large result.
    """
    inline = payload_bytes(record) <= max_payload_bytes
    params = detailed(record, poll_interval_ms) if inline else task_fields(record, poll_interval_ms)
    return {"jsonrpc": "2.0", "method": NOTIFICATION, "params": params, "principal": record.principal}

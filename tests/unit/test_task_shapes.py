"""notifications/tasks (tasks/shapes.py): the DetailedTask when its payload is small, the Task when not."""

from __future__ import annotations

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.tasks.record import CANCELLED, COMPLETED, FAILED, INPUT_REQUIRED, TaskRecord
from flask_mcp_gevent.tasks.shapes import detailed, notification, payload_bytes

TASK_FIELDS = {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}


def record(status: str, **payload: object) -> TaskRecord:
    """A task of alice in status, with payload fields (result, error, asks, answers)."""
    return TaskRecord(task_id="t1", principal="alice", status=status, created_ms=1_000, updated_ms=2_000,
                      ttl_ms=60_000, **payload)


def result_of(size: int) -> str:
    """A CallToolResult's JSON with a text of size characters."""
    return dumps({"content": [{"type": "text", "text": "r" * size}], "isError": False}).decode()


def test_a_small_result_is_inlined_as_tasks_get_would_answer():
    task = record(COMPLETED, result=result_of(100))
    note = notification(task, 1000, max_payload_bytes=1024)
    assert note["method"] == "notifications/tasks"
    assert note["params"] == detailed(task, 1000)
    assert note["params"]["result"]["content"][0]["text"] == "r" * 100
    assert note["principal"] == "alice"


def test_a_result_over_the_bound_leaves_only_the_tasks_own_fields():
    task = record(COMPLETED, result=result_of(5000), status_message="done")
    params = notification(task, 1000, max_payload_bytes=1024)["params"]
    assert set(params) == TASK_FIELDS | {"statusMessage"}
    assert (params["status"], params["statusMessage"]) == ("completed", "done")


def test_large_questions_and_errors_are_left_out_too():
    ask = dumps({"method": "elicitation/create", "params": {"message": "q" * 2000}}).decode()
    asking = record(INPUT_REQUIRED, asks={"a": ask})
    failed = record(FAILED, error=dumps({"code": -32603, "message": "e" * 2000}).decode())
    assert set(notification(asking, 1000, 1024)["params"]) == TASK_FIELDS
    assert set(notification(failed, 1000, 1024)["params"]) == TASK_FIELDS
    assert "inputRequests" in notification(asking, 1000, 4096)["params"]
    assert "error" in notification(failed, 1000, 4096)["params"]


def test_the_payload_counts_open_questions_only_and_nothing_for_a_cancelled_task():
    ask = dumps({"method": "elicitation/create", "params": {}}).decode()
    asking = record(INPUT_REQUIRED, asks={"a": ask, "b": ask}, answers={"a": "{}"})
    assert payload_bytes(asking) == len(ask)
    assert payload_bytes(record(CANCELLED, result=result_of(10))) == 0

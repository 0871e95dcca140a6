"""The fixtures of conformance 0.2.0-alpha.12's tasks-* scenarios (the tasks extension), as a plugin.

greet runs at once; the others declare task support. Each is an ordinary tool: a session-era session, or a
2026-07-28 request without the extension, runs it as a plain call (the required ones get -32021 there).
"""

from __future__ import annotations

import gevent

from mcp_tools import InputRequest, ProtocolError, ToolError, tool

NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}
# The longest slow_compute sleeps: the suite asks for 60 s and cancels; a bound keeps a forgotten task short.
MAX_SECONDS = 120
CONFIRM_SCHEMA = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def accepted(answer: dict, field: str) -> object:
    """A field of an accepted elicitation's content (None when declined)."""
    content = answer.get("content") if answer.get("action") == "accept" else None
    return (content or {}).get(field) if isinstance(content, dict) else None


@tool(input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
def greet(name: str) -> str:
    """Greet someone, at once (no task)."""
    return f"Hello, {name}!"


@tool(input_schema={"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0},
                                                     "label": {"type": "string"}}},
      task="optional")
def slow_compute(seconds: float = 1, label: str = "") -> str:
    """Sleep for seconds (at most two minutes), then say so; as a task, cancellable while it sleeps."""
    gevent.sleep(min(seconds, MAX_SECONDS))
    return f"Computed {label or 'result'} after {seconds:g} s"


@tool(input_schema=NO_ARGUMENTS, task="required")
def failing_job() -> str:
    """Fail after about a second, as a tool error (a task: completed, with isError)."""
    gevent.sleep(1)
    raise ToolError("failing_job always fails")


@tool(input_schema=NO_ARGUMENTS, task="optional")
def protocol_error_job() -> str:
    """Fail with a JSON-RPC error (a task: failed, with the error)."""
    raise ProtocolError("protocol_error_job always fails at the protocol level")


@tool(input_schema={"type": "object", "properties": {"filename": {"type": "string"}}, "required": ["filename"]},
      task="optional")
def confirm_delete(ctx, filename: str) -> str:
    """Ask the user to confirm, then say whether the file would be deleted."""
    answer = ctx.elicit(f"Delete {filename}?", CONFIRM_SCHEMA, key="confirm")
    return f"Deleted {filename}" if accepted(answer, "confirm") else f"Kept {filename}"


@tool(input_schema=NO_ARGUMENTS, task="optional")
def multi_input(ctx) -> str:
    """Ask two questions at once, so that two answers are pending together."""
    first, second = ctx.ask_all([InputRequest.elicitation("First name?", NAME_SCHEMA, key="first"),
                                 InputRequest.elicitation("Second name?", NAME_SCHEMA, key="second")])
    return f"Got {accepted(first, 'name')} and {accepted(second, 'name')}"


@tool(input_schema=NO_ARGUMENTS, task="required", ask_before_task=True)
def test_tool_with_task(ctx) -> str:
    """Ask for a name on the original request (a multi round-trip round), then go on as a task."""
    answer = ctx.elicit("What is your name?", NAME_SCHEMA, key="user_name")
    ctx.start_task()
    gevent.sleep(0.2)
    return f"Hello, {accepted(answer, 'name') or 'stranger'}, from a task"

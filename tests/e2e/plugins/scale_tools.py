"""Tools the scale-out tests drive: which worker runs a call, a call that asks the client, one that waits.

Loaded with MCP_PLUGINS=tests.e2e.plugins.scale_tools. Several workers run these,
so state a test must observe goes to a file the test names, never to module globals.
"""

from __future__ import annotations

import os
from pathlib import Path

import gevent

from mcp_tools import tool

NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}


@tool(input_schema=NO_ARGUMENTS, annotations={"readOnlyHint": True})
def worker_pid() -> int:
    """Return the pid of the worker process running this call."""
    return os.getpid()


@tool(input_schema={
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["sample", "elicit"], "description": "What to ask the client."},
    },
    "required": ["kind"],
    "additionalProperties": False,
})
def ask_client(kind: str, ctx) -> dict:
    """Ask the client's model (sampling) or its user (elicitation), and return the answer and this worker's pid."""
    if kind == "sample":
        answer = ctx.sample([{"role": "user", "content": {"type": "text", "text": "Say hi"}}], max_tokens=16)
    else:
        answer = ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return {"answer": answer, "pid": os.getpid()}


@tool(input_schema={
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "A file the test reads to see what the call is doing."},
        "seconds": {"type": "number", "minimum": 0, "maximum": 60, "description": "How long to wait."},
    },
    "required": ["path", "seconds"],
    "additionalProperties": False,
})
def hold(path: str, seconds: float) -> str:
    """Wait, writing 'running <pid>', then 'finished' or 'cancelled' to path."""
    state = Path(path)
    state.write_text(f"running {os.getpid()}")
    try:
        gevent.sleep(seconds)
    except gevent.GreenletExit:
        state.write_text("cancelled")
        raise
    state.write_text("finished")
    return "finished"

"""A tool that spawns a greenlet which dies of an exception, to see where the failure is logged."""

import gevent

from mcp_tools import tool


def fail_for(session_id: str) -> None:
    """Raise; gevent's own printer would show session_id, this greenlet's argument."""
    raise RuntimeError("a greenlet failed on purpose")


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def spawn_failing_greenlet(ctx) -> str:
    """Spawn a greenlet that raises, given this session's id, and wait for it to end."""
    gevent.spawn(fail_for, ctx.session_id).join(5)
    return "spawned"

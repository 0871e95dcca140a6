"""What a task keeps of the tools/call that made it: the tool, its arguments, the round state, and the client's
capabilities reduced to their names, at most MCP_TASK_MAX_REQUEST_BYTES of JSON; and its answers' bound.

A task lives for its TTL, so it must not keep what a request brought and the run never reads: the server's
checks ask only whether a capability (elicitation, sampling, roots, extensions) and its members (elicitation's
modes, an extension's id) are declared, never what they hold.
"""

from __future__ import annotations

from typing import Any

from flask_mcp_gevent.encoding import dumps, utf8_size
from flask_mcp_gevent.errors import INVALID_PARAMS, RpcError

__all__ = ["check_answer_bytes", "kept_capabilities", "task_request"]


def kept_capabilities(capabilities: object) -> dict[str, dict[str, Any]]:
    """Each declared capability (an object) with its members' names, their contents emptied to {}."""
    if not isinstance(capabilities, dict):
        return {}
    return {name: {member: {} for member in value} for name, value in capabilities.items() if isinstance(value, dict)}


def task_request(name: str, arguments: Any, capabilities: object, version: str | None, state: Any,
                 limit: int) -> str:
    """The JSON a task keeps of its tools/call; -32602 when it would be over limit bytes."""
    data = dumps({"name": name, "arguments": arguments, "capabilities": kept_capabilities(capabilities),
                  "version": version, "state": state})
    if len(data) > limit:
        raise RpcError(INVALID_PARAMS, f"Invalid params: as a task, this call would keep {len(data)} bytes (its "
                       f"arguments, mostly); a task keeps at most {limit} (MCP_TASK_MAX_REQUEST_BYTES): send "
                       "smaller arguments", {"tool": name})
    return data.decode()


def check_answer_bytes(answers: dict[str, str], limit: int) -> None:
    """-32602 when the answers a task would keep (JSON texts) take more than limit bytes."""
    kept = sum(utf8_size(answer) for answer in answers.values())
    if kept > limit:
        raise RpcError(INVALID_PARAMS, f"Invalid params: the task's answers would take {kept} bytes; a task keeps "
                       f"at most {limit} (MCP_TASK_MAX_RESULT_BYTES)")

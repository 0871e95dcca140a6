"""tools/call: find the tool, validate its arguments, call the function, shape its result for the version, check it.

`tools_call` is the session era's handler, straight from the method table to the tool; the 2026-07-28 wire's
(methods.stateless_tools_call) adds the tasks extension and the input rounds around the same `run_tool`.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import logging
import uuid
from typing import Any

from jsonrpcserver import Success

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError, new_correlation_id
from flask_mcp_gevent.protocol.request_context import HANDLER_STOPS, RequestContext, guarded
from flask_mcp_gevent.session import at_least
from flask_mcp_gevent.stateless.input_rounds import RoundRefusal
from flask_mcp_gevent.toolkit.arguments import InvalidArgument
from flask_mcp_gevent.toolkit.content import ToolResult
from flask_mcp_gevent.toolkit.context import ProtocolError, ToolError
from flask_mcp_gevent.toolkit.specs import Tool

__all__ = ["error_result", "find_tool", "json_ready", "run_tool", "schema_errors", "shape_tool_result", "to_text",
           "tools_call"]

log = logging.getLogger("mcp.tools")

# From this version a schema violation is a tool result the model can correct, not a protocol error.
VALIDATION_AS_RESULT_SINCE = "2025-11-25"
MAX_REPORTED_ERRORS = 10
MAX_ERROR_TEXT = 300
# From this version a result carries structuredContent beside its text.
STRUCTURED_SINCE = "2025-06-18"
# The values json_ready leaves as they are.
PLAIN = (str, int, float, bool, type(None))


def to_text(value: Any) -> str:
    """Render a value for a text block: strings as they are, everything else as JSON."""
    if isinstance(value, str):
        return value
    return dumps(value).decode()


def json_ready(value: Any) -> Any:
    """value with only JSON values in it: dataclasses as objects, datetimes and dates in ISO 8601, UUIDs as text,
    enums as their values, tuples as lists, nested too; anything else is left to the encoder."""
    if type(value) in PLAIN:
        return value
    if isinstance(value, dict):
        return {key.value if isinstance(key, enum.Enum) else key: json_ready(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(item) for item in value]
    if isinstance(value, enum.Enum):
        return json_ready(value.value)
    if isinstance(value, datetime.date):  # a datetime.datetime is a date too
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: json_ready(getattr(value, field.name)) for field in dataclasses.fields(value)}
    return value


def structured(value: Any, wraps: bool = False) -> dict[str, Any]:
    """structuredContent must be an object: {"result": value} unless value is a dict its outputSchema describes.

    wraps: the tool's outputSchema was inferred from a return type that is not an object (int, list[str],
    Optional[MyTypedDict]), and says {"result": ...} for every value, a dict too.
    """
    return value if isinstance(value, dict) and not wraps else {"result": value}


def shape_tool_result(value: Any, version: str | None, wraps: bool = False) -> dict[str, Any]:
    """Build the result for a tool's return value, made JSON-ready (dataclasses, datetimes, enums ...)."""
    if isinstance(value, ToolResult):
        result: dict[str, Any] = {"content": list(value.content), "isError": value.is_error}
        if value.structured is not None and at_least(version, STRUCTURED_SINCE):
            result["structuredContent"] = json_ready(value.structured)
        dumps(result)  # what the tool built itself must fail here, as the tool's, not when the response is sent
        return result
    value = json_ready(value)
    result = {"content": [{"type": "text", "text": to_text(value)}], "isError": False}
    if at_least(version, STRUCTURED_SINCE):
        result["structuredContent"] = structured(value, wraps)
    return result


def error_result(message: str) -> dict[str, Any]:
    """A tool-level failure the model can read and react to."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


def schema_errors(tool: Tool, arguments: dict[str, Any]) -> list[dict[str, str]]:
    """Return the argument's schema violations as path/message pairs, most relevant first."""
    if tool.input_validator.is_valid(arguments):
        return []  # the common case, without collecting and sorting errors
    errors = sorted(tool.input_validator.iter_errors(arguments), key=lambda e: list(e.path))
    return [
        {
            "path": "/" + "/".join(str(part) for part in error.path),
            "message": error.message[:MAX_ERROR_TEXT],
        }
        for error in errors[:MAX_REPORTED_ERRORS]
    ]


def invalid_arguments(tool: Tool, version: str | None, problems: list[dict[str, str]]) -> dict[str, Any]:
    """Arguments the tool cannot take: a result the model can correct from 2025-11-25, else -32602 (raised)."""
    summary = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
    if at_least(version, VALIDATION_AS_RESULT_SINCE):
        return error_result(f"Invalid arguments for tool '{tool.name}': {summary}")
    raise RpcError(INVALID_PARAMS, f"Invalid arguments for tool '{tool.name}': {summary}",
                   {"tool": tool.name, "errors": problems})


def run_tool(ctx: RequestContext, tool: Tool, arguments: Any) -> dict[str, Any]:
    """Call tool with arguments and return a CallToolResult; raise RpcError for protocol errors."""
    version = ctx.session.protocol_version
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'arguments' must be an object", {"tool": tool.name})
    problems = schema_errors(tool, arguments)
    if problems:
        return invalid_arguments(tool, version, problems)
    kwargs = dict(arguments)
    if tool.convert_arguments is not None:
        try:
            kwargs = tool.convert_arguments(kwargs)
        except InvalidArgument as problem:  # valid by the schema, yet not what the hint names ("2024-13-45")
            return invalid_arguments(tool, version, [{"path": problem.path,
                                                      "message": problem.message[:MAX_ERROR_TEXT]}])
    if tool.wants_context:
        kwargs["ctx"] = ctx
    try:
        value = tool.fn(**kwargs)
    except RoundRefusal:
        raise  # -32021 or a malformed answer on the stateless wire: a protocol error, not the tool's failure
    except ProtocolError as exc:
        code = exc.code if type(exc.code) is int else INTERNAL_ERROR
        raise RpcError(code, str(exc) or f"Tool '{tool.name}' failed", json_or_none(tool, exc.data)) from None
    except ToolError as exc:
        return error_result(str(exc) or f"Tool '{tool.name}' failed")
    except HANDLER_STOPS:
        raise
    except BaseException:  # a gevent.Timeout or SystemExit would leave the call unanswered
        correlation_id = new_correlation_id()
        log.exception("tool %s failed (correlation id %s)", tool.name, correlation_id)
        return error_result(f"Tool '{tool.name}' failed with an internal error (correlation id {correlation_id})")
    try:
        result = shape_tool_result(value, version, tool.wraps_output)
    except (TypeError, ValueError):  # a set, bytes, an object: nothing JSON can carry
        correlation_id = new_correlation_id()
        log.exception("tool %s returned a value JSON cannot carry (correlation id %s)", tool.name, correlation_id)
        return error_result(f"Tool '{tool.name}' returned a value JSON cannot carry (correlation id {correlation_id})")
    if tool.output_validator is not None and "structuredContent" in result and not result["isError"]:
        if not tool.output_validator.is_valid(result["structuredContent"]):
            correlation_id = new_correlation_id()
            log.error("tool %s returned output outside its outputSchema (correlation id %s)", tool.name, correlation_id)
            return error_result(
                f"Tool '{tool.name}' produced output that does not match its outputSchema "
                f"(correlation id {correlation_id})"
            )
    return result


def json_or_none(tool: Tool, data: Any) -> Any:
    """A ProtocolError's data if JSON can carry it; else None, logged (the error itself must still go out)."""
    try:
        dumps(data)
    except (TypeError, ValueError):
        log.error("tool %s raised ProtocolError with data JSON cannot carry (%s); sent without it",
                  tool.name, type(data).__name__)
        return None
    return data


def find_tool(ctx: RequestContext, name: Any) -> Tool:
    """The named tool, if this principal may call it; -32602 for an unknown one."""
    # Permission first, so a principal cannot tell a hidden tool from a missing one.
    if isinstance(name, str):
        ctx.require("tool", name)
    tool = ctx.registry.tools.get(name) if isinstance(name, str) else None
    if tool is None:
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name!r}; call tools/list to see the tools", {"tool": name})
    return tool


@guarded
def tools_call(ctx: RequestContext, name: Any, arguments: Any = None, **_: Any) -> Any:
    """Validate the arguments and run the named tool (a session-era call: it has neither input rounds nor tasks)."""
    return Success(run_tool(ctx, find_tool(ctx, name), {} if arguments is None else arguments))

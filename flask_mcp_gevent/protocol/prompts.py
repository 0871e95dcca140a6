"""Prompts: describe them, check their arguments, and render them into messages."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from flask_mcp_gevent.errors import INTERNAL_ERROR, INVALID_PARAMS, RpcError, new_correlation_id
from flask_mcp_gevent.stateless.input_rounds import RoundRefusal
from flask_mcp_gevent.toolkit.context import ToolError
from flask_mcp_gevent.toolkit.specs import Prompt

if TYPE_CHECKING:
    from flask_mcp_gevent.protocol.request_context import RequestContext

__all__ = ["describe_prompt", "render_prompt"]

log = logging.getLogger("mcp.prompts")


def describe_prompt(prompt: Prompt) -> dict[str, Any]:
    """The prompts/list entry for a prompt."""
    entry: dict[str, Any] = {"name": prompt.name}
    if prompt.title:
        entry["title"] = prompt.title
    if prompt.description:
        entry["description"] = prompt.description
    entry["arguments"] = [
        {"name": arg.name, "description": arg.description, "required": arg.required} for arg in prompt.arguments
    ]
    return entry


def check_arguments(prompt: Prompt, arguments: Any) -> dict[str, str]:
    """Return the arguments if they fit the prompt; -32602 naming what is missing or unknown."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise RpcError(INVALID_PARAMS, "Invalid params: prompt 'arguments' must be an object of strings",
                       {"prompt": prompt.name})
    known = {arg.name for arg in prompt.arguments}
    missing = [arg.name for arg in prompt.arguments if arg.required and arg.name not in arguments]
    if missing:
        raise RpcError(INVALID_PARAMS, f"Missing required argument(s) for prompt '{prompt.name}': {', '.join(missing)}",
                       {"prompt": prompt.name, "missing": missing})
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise RpcError(INVALID_PARAMS, f"Unknown argument(s) for prompt '{prompt.name}': {', '.join(unknown)}",
                       {"prompt": prompt.name, "unknown": unknown})
    return arguments


def to_messages(value: Any) -> list[dict[str, Any]]:
    """Turn what a prompt returned into messages: a string becomes one user text message."""
    if isinstance(value, str):
        return [{"role": "user", "content": {"type": "text", "text": value}}]
    if isinstance(value, dict):
        return [value]
    return list(value)


def render_prompt(ctx: RequestContext, prompt: Prompt, arguments: Any) -> dict[str, Any]:
    """Run the prompt function and return the prompts/get result."""
    kwargs: dict[str, Any] = dict(check_arguments(prompt, arguments))
    if prompt.wants_context:
        kwargs["ctx"] = ctx
    try:
        value = prompt.fn(**kwargs)
    except RoundRefusal:
        raise
    except ToolError as refusal:
        raise RpcError(INVALID_PARAMS, str(refusal), {"prompt": prompt.name}) from None
    except Exception:
        correlation_id = new_correlation_id()
        log.exception("prompt %s failed (correlation id %s)", prompt.name, correlation_id)
        raise RpcError(INTERNAL_ERROR, "Internal error while rendering the prompt",
                       {"prompt": prompt.name, "correlationId": correlation_id}) from None
    result: dict[str, Any] = {"messages": to_messages(value)}
    if prompt.description:
        result["description"] = prompt.description
    return result

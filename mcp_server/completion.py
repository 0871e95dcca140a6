"""Argument completion for prompt arguments and resource-template variables."""

from __future__ import annotations

import inspect
import itertools
import logging
from typing import Any

from mcp_server.errors import INVALID_PARAMS, RpcError
from mcp_server.resources import template_variables

__all__ = ["MAX_VALUES", "complete"]

log = logging.getLogger("mcp.completion")
MAX_VALUES = 100
# How many suggestions we look at beyond the first 100, to tell the client there are more.
LOOKAHEAD = 1


def find_completer(registry: Any, ref: Any, argument_name: str) -> Any:
    """Return the completer for a reference, or None when it has none; -32602 for unknown refs."""
    if not isinstance(ref, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'ref' must be an object")
    if ref.get("type") == "ref/prompt":
        prompt = registry.prompts.get(ref.get("name"))
        if prompt is None:
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {ref.get('name')!r}", {"ref": ref})
        if argument_name not in {arg.name for arg in prompt.arguments}:
            raise RpcError(INVALID_PARAMS, f"Prompt '{prompt.name}' has no argument {argument_name!r}")
        return prompt.complete
    if ref.get("type") == "ref/resource":
        template = registry.templates.get(ref.get("uri"))
        if template is None:
            # A fixed resource has no variables, so nothing to complete.
            if ref.get("uri") in registry.resources:
                return None
            raise RpcError(INVALID_PARAMS, f"Unknown resource template: {ref.get('uri')!r}", {"ref": ref})
        if argument_name not in template_variables(template.uri_template):
            raise RpcError(INVALID_PARAMS, f"Template has no variable {argument_name!r}")
        return template.complete
    raise RpcError(INVALID_PARAMS, "Invalid params: ref.type must be 'ref/prompt' or 'ref/resource'")


def complete(ctx: Any, ref: Any, argument: Any, context: Any = None) -> dict[str, Any]:
    """Return the completion/complete result: at most 100 values, with total and hasMore."""
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'argument' must be an object with 'name' and 'value'")
    value = argument.get("value", "")
    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'argument.value' must be a string")
    completer = find_completer(ctx.core.registry, ref, argument["name"])
    values: list[str] = []
    if completer is not None:
        known = context.get("arguments") if isinstance(context, dict) else None
        ctx.arguments = known if isinstance(known, dict) else {}
        if takes_context(completer):
            suggestions = completer(argument["name"], value, ctx)
        else:
            suggestions = completer(argument["name"], value)
        values = [str(v) for v in itertools.islice(suggestions, MAX_VALUES + LOOKAHEAD)]
    has_more = len(values) > MAX_VALUES
    values = values[:MAX_VALUES]
    return {"completion": {"values": values, "hasMore": has_more, **({} if has_more else {"total": len(values)})}}


def takes_context(completer: Any) -> bool:
    """True when a completer accepts the request context (settings, resolved arguments) third."""
    try:
        return len(inspect.signature(completer).parameters) >= 3
    except (TypeError, ValueError):
        return False

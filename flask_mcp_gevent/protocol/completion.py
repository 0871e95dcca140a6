"""Argument completion for prompt arguments and resource-template variables.

A template's suggestions are only those the principal could read: each value is
put into the template and the URI (and what it really names) checked against the
principal's permissions, looking at MCP_COMPLETION_SCAN_MAX suggestions at most.
"""

from __future__ import annotations

import inspect
import itertools
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import gevent

from flask_mcp_gevent.errors import INVALID_PARAMS, RpcError
from flask_mcp_gevent.protocol.resources import expand_template, resolved_uri, template_variables
from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.toolkit.specs import Completion, ResourceTemplate

if TYPE_CHECKING:
    from flask_mcp_gevent.protocol.request_context import RequestContext

__all__ = ["MAX_VALUES", "complete"]

log = logging.getLogger("mcp.completion")
MAX_VALUES = 100
# How many suggestions we look at beyond the first 100, to tell the client there are more.
LOOKAHEAD = 1
# Suggestions checked against permissions between two yields to the worker's other greenlets.
CHECKS_PER_YIELD = 64


def find_completer(registry: Registry, ref: Any, argument_name: str) -> Any:
    """Return the completer for a reference, or None when it has none; -32602 for unknown refs."""
    if not isinstance(ref, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'ref' must be an object")
    if ref.get("type") == "ref/prompt":
        name = ref.get("name")
        prompt = registry.prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {name!r}", {"ref": ref})
        if argument_name not in {arg.name for arg in prompt.arguments}:
            raise RpcError(INVALID_PARAMS, f"Prompt '{prompt.name}' has no argument {argument_name!r}")
        return prompt.complete
    if ref.get("type") == "ref/resource":
        uri = ref.get("uri")
        if not isinstance(uri, str):
            raise RpcError(INVALID_PARAMS, f"Unknown resource template: {uri!r}", {"ref": ref})
        template = registry.templates.get(uri)
        if template is None:
            # A fixed resource has no variables, so nothing to complete.
            if uri in registry.resources:
                return None
            raise RpcError(INVALID_PARAMS, f"Unknown resource template: {uri!r}", {"ref": ref})
        if argument_name not in template_variables(template.uri_template):
            raise RpcError(INVALID_PARAMS, f"Template has no variable {argument_name!r}")
        return template.complete
    raise RpcError(INVALID_PARAMS, "Invalid params: ref.type must be 'ref/prompt' or 'ref/resource'")


def complete(ctx: RequestContext, ref: Any, argument: Any, context: Any = None) -> dict[str, Any]:
    """Return the completion/complete result: at most 100 values, with total and hasMore."""
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'argument' must be an object with 'name' and 'value'")
    value = argument.get("value", "")
    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'argument.value' must be a string")
    completer = find_completer(ctx.registry, ref, argument["name"])
    values: list[str] = []
    cut_short = False
    if completer is not None:
        known = context.get("arguments") if isinstance(context, dict) else None
        ctx.arguments = known if isinstance(known, dict) else {}
        if takes_context(completer):
            suggestions = completer(argument["name"], value, ctx)
        else:
            suggestions = completer(argument["name"], value)
        if isinstance(suggestions, Completion):
            cut_short = suggestions.has_more
            suggestions = suggestions.values
        suggestions = (str(v) for v in suggestions)
        template = ctx.registry.templates.get(ref.get("uri")) if ref.get("type") == "ref/resource" else None
        # Without authentication every value is readable, and checking each would only cost time.
        if template is not None and ctx.checks_permissions:
            values, stopped = readable_values(ctx, template, argument["name"], suggestions)
            # More is said only beside a value the principal may read: a hasMore with no value would tell it that a
            # place it may not see (a directory of others' files) is large.
            cut_short = (cut_short or stopped) and bool(values)
        else:
            values = list(itertools.islice(suggestions, MAX_VALUES + LOOKAHEAD))
    has_more = cut_short or len(values) > MAX_VALUES
    values = values[:MAX_VALUES]
    return {"completion": {"values": values, "hasMore": has_more, **({} if has_more else {"total": len(values)})}}


def readable_values(ctx: RequestContext, template: ResourceTemplate, name: str, suggestions: Iterable[str],
                    ) -> tuple[list[str], bool]:
    """The first MAX_VALUES + LOOKAHEAD suggestions the principal may read; and whether the scan bound stopped it."""
    known = {key: str(given) for key, given in ctx.arguments.items()}
    found: list[str] = []
    for checked, value in enumerate(suggestions, start=1):
        if checked > ctx.settings.completion_scan_max:
            return found, True
        if checked % CHECKS_PER_YIELD == 0:
            gevent.sleep(0)  # a restricted principal's long list must not hold up other requests
        if may_read(ctx, template, {**known, name: value}):
            found.append(value)
            if len(found) == MAX_VALUES + LOOKAHEAD:
                break
    return found, False


def may_read(ctx: RequestContext, template: ResourceTemplate, variables: dict[str, str]) -> bool:
    """Whether the principal may read the URI these variables make, and what that URI really names."""
    uri = expand_template(template.uri_template, variables)
    if not ctx.permits("resource", uri):
        return False
    try:
        real = resolved_uri(template, ctx, uri, variables)
    except RpcError:
        return False  # the reader would refuse it (outside the root, not there): not worth suggesting
    return real == uri or ctx.permits("resource", real)


def takes_context(completer: Any) -> bool:
    """True when a completer accepts the request context (settings, resolved arguments) third."""
    try:
        return len(inspect.signature(completer).parameters) >= 3
    except (TypeError, ValueError):
        return False

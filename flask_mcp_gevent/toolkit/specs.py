"""What a tool, resource or prompt is (frozen specs), and the decorators that attach one to a function.

Decorators only mark a function with its spec, checked once; the registry collects marked functions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flask_mcp_gevent.toolkit.checks import (
    RegistryError,
    check_name,
    check_parameters,
    check_synchronous,
    check_task_support,
    compile_schema,
    first_doc_line,
    takes_context,
)
from flask_mcp_gevent.toolkit.validators import QuickValidator

if TYPE_CHECKING:
    from flask_mcp_gevent.toolkit.context import Completion

__all__ = [
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceTemplate",
    "Tool",
    "prompt",
    "resource",
    "resource_template",
    "tool",
]

# A URI template variable: {name} for one path segment, {+name} for the rest (RFC 6570 level 1 and reserved).
TEMPLATE_VARIABLE = re.compile(r"\{(\+?)([A-Za-z0-9_]+)\}")
MARK = "__mcp_spec__"
# What completes a template's variable or a prompt's argument: its values, or a Completion that says it stopped early.
Completer = Callable[..., "Iterable[str] | Completion"]


@dataclass(frozen=True)
class Tool:
    """A callable tool: its name, schemas and the function that runs it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    fn: Callable[..., Any]
    input_validator: QuickValidator = field(repr=False, compare=False)
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    output_validator: QuickValidator | None = field(repr=False, compare=False, default=None)
    wants_context: bool = False
    # The tasks extension (MCP 2026-07-28): None runs every call at once; "optional" lets a request that declared
    # io.modelcontextprotocol/tasks get a task; "required" refuses (-32021) a 2026-07-28 request that did not.
    task: str | None = None
    # With a task: the call becomes a task when the tool calls ctx.start_task() (its asks before are rounds of the
    # original request), not before the tool starts.
    ask_before_task: bool = False


@dataclass(frozen=True)
class Resource:
    """A readable resource at a fixed URI."""

    uri: str
    name: str
    fn: Callable[..., Any]
    description: str = ""
    mime_type: str | None = None
    title: str | None = None
    wants_context: bool = False


@dataclass(frozen=True)
class ResourceTemplate:
    """A family of resources named by an RFC 6570 level-1 URI template."""

    uri_template: str
    name: str
    fn: Callable[..., Any]
    description: str = ""
    mime_type: str | None = None
    title: str | None = None
    complete: Completer | None = None
    # resolve(**variables, ctx) -> the variables of what a URI really names (a symlink's target, say):
    # a principal needs permission on that URI as well as on the one it asked for.
    resolve: Callable[..., dict[str, str]] | None = None
    wants_context: bool = False


@dataclass(frozen=True)
class PromptArgument:
    """One named argument of a prompt."""

    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class Prompt:
    """A prompt template that renders to a list of messages."""

    name: str
    fn: Callable[..., Any]
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()
    title: str | None = None
    complete: Completer | None = None
    wants_context: bool = False


def spec_of(fn: Callable[..., Any]) -> Tool | Resource | ResourceTemplate | Prompt:
    """The spec one of the decorators attached to fn."""
    spec = getattr(fn, MARK, None)
    if spec is None:
        raise RegistryError(f"{fn!r} carries no @tool, @resource or @prompt mark")
    return spec


def marking(build: Callable[[Callable[..., Any]], Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator that attaches build(fn), the function's spec, to fn and returns fn unchanged."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        setattr(fn, MARK, build(fn))
        return fn

    return mark


def common_fields(fn: Callable[..., Any], name: str | None, kind: str, description: str | None) -> dict[str, Any]:
    """The fields every spec has: a checked name, the function, its description, whether it takes ctx."""
    checked = check_name(name or fn.__name__, kind)
    check_synchronous(fn, f"{kind} {checked!r}")
    return {
        "name": checked,
        "fn": fn,
        "description": description if description is not None else first_doc_line(fn),
        "wants_context": takes_context(fn),
    }


def tool(
    name: str | None = None,
    *,
    # Optional in the signature only so that a bare @tool reaches the friendly error below.
    input_schema: dict[str, Any] | None = None,
    description: str | None = None,
    output_schema: dict[str, Any] | None = None,
    title: str | None = None,
    annotations: dict[str, Any] | None = None,
    task: str | None = None,
    ask_before_task: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as a tool with an explicit JSON Schema for its arguments (task: None, optional, required)."""
    if callable(name):
        raise RegistryError("use @tool(input_schema={...}), not bare @tool")
    if input_schema is None:
        raise RegistryError("@tool needs input_schema={...}: an explicit JSON Schema for the arguments")
    check_task_support(task, ask_before_task)

    def build(fn: Callable[..., Any]) -> Tool:
        fields = common_fields(fn, name, "tool", description)
        label = f"tool {fields['name']!r}"
        input_validator = compile_schema(input_schema, f"{label} input_schema")
        output_validator = None if output_schema is None else compile_schema(output_schema, f"{label} output_schema")
        check_parameters(fn, label, set(input_schema.get("properties", {})), set(input_schema.get("required", [])),
                         "property")
        return Tool(input_schema=input_schema, output_schema=output_schema, title=title, annotations=annotations,
                    input_validator=input_validator, output_validator=output_validator, task=task,
                    ask_before_task=ask_before_task, **fields)

    return marking(build)


def resource(
    uri: str,
    *,
    name: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    title: str | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as the reader of the resource at `uri`."""
    if callable(uri):
        raise RegistryError("use @resource('scheme://uri'), not bare @resource")

    def build(fn: Callable[..., Any]) -> Resource:
        fields = common_fields(fn, name, "resource", description)
        # A fixed URI carries no variables, so the reader gets no arguments (only ctx, if it asks).
        check_parameters(fn, f"resource {uri!r}", set(), set(), "URI variable")
        return Resource(uri=uri, mime_type=mime_type, title=title, **fields)

    return marking(build)


def resource_template(
    uri_template: str,
    *,
    name: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    title: str | None = None,
    complete: Completer | None = None,
    resolve: Callable[..., dict[str, str]] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as the reader of every URI matching `uri_template`."""
    if callable(uri_template):
        raise RegistryError("use @resource_template('scheme://{var}'), not bare @resource_template")

    def build(fn: Callable[..., Any]) -> ResourceTemplate:
        fields = common_fields(fn, name, "resource template", description)
        # Every variable matches at least one character, so a matching URI always supplies all of them.
        variables = {var for _, var in TEMPLATE_VARIABLE.findall(uri_template)}
        check_parameters(fn, f"resource template {uri_template!r}", variables, variables, "URI variable")
        return ResourceTemplate(uri_template=uri_template, mime_type=mime_type, title=title, complete=complete,
                                resolve=resolve, **fields)

    return marking(build)


def prompt(
    name: str | None = None,
    *,
    arguments: Iterable[PromptArgument] = (),
    description: str | None = None,
    title: str | None = None,
    complete: Completer | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as a prompt; it returns the prompt's messages."""
    if callable(name):
        raise RegistryError("use @prompt(arguments=[...]), not bare @prompt")
    arguments = tuple(arguments)

    def build(fn: Callable[..., Any]) -> Prompt:
        fields = common_fields(fn, name, "prompt", description)
        check_parameters(fn, f"prompt {fields['name']!r}", {arg.name for arg in arguments},
                         {arg.name for arg in arguments if arg.required}, "argument")
        return Prompt(arguments=arguments, title=title, complete=complete, **fields)

    return marking(build)

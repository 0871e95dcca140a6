"""What a tool, resource or prompt is (frozen specs), and the decorators that attach one to a function.

Decorators only mark a function with its spec, checked once; the registry collects marked functions.
What a declaration leaves out comes from the function: a tool's schemas from its hints (hints.py), a prompt's
arguments from its parameters, descriptions from the docstring. `MCP.tool` and the others are sugar over these.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flask_mcp_gevent.toolkit.arguments import build_arguments
from flask_mcp_gevent.toolkit.checks import (
    RegistryError,
    check_name,
    check_parameters,
    check_synchronous,
    check_task_support,
    compile_schema,
    first_doc_line,
    takes_context,
    where,
)
from flask_mcp_gevent.toolkit.hints import doc_descriptions, input_schema_of, output_schema_of
from flask_mcp_gevent.toolkit.validators import QuickValidator

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
class Completion:
    """What a completer may return instead of an iterable: its values, and whether it stopped before the end."""

    values: Sequence[str]
    # True when the completer gave up looking (a bound on its work), so there may be values it never saw.
    has_more: bool = False

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
    # Turns valid JSON arguments into what the hints name (arguments.build_arguments); None: they stay JSON.
    # Set when the input schema was inferred from the hints, which then say what each argument is.
    convert_arguments: Callable[[dict[str, Any]], dict[str, Any]] | None = field(repr=False, compare=False,
                                                                                 default=None)
    # True when the outputSchema was inferred from a return type that is not an object, and so wraps every
    # result as {"result": value}, a dict too.
    wraps_output: bool = False


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
    checked = check_name(name or fn.__name__, f"{kind} ({where(fn)})")
    check_synchronous(fn, f"{kind} {checked!r}")
    return {
        "name": checked,
        "fn": fn,
        "description": description if description is not None else first_doc_line(fn),
        "wants_context": takes_context(fn),
    }


def tool(
    name: str | Callable[..., Any] | None = None,
    *,
    input_schema: dict[str, Any] | None = None,
    description: str | None = None,
    output_schema: dict[str, Any] | None = None,
    title: str | None = None,
    annotations: dict[str, Any] | None = None,
    task: str | None = None,
    ask_before_task: bool = False,
) -> Any:
    """Mark a function as a tool: bare `@tool`, or `@tool(...)` (task: None, "optional" or "required").

    Its input schema is input_schema, else inferred from its hints (and the arguments then arrive as the hints
    say); its outputSchema is output_schema, else inferred from its return hint when that has a JSON Schema.
    """
    if callable(name):
        return tool()(name)
    check_task_support(task, ask_before_task)

    def build(fn: Callable[..., Any]) -> Tool:
        fields = common_fields(fn, name, "tool", description)
        label = f"tool {fields['name']!r}"
        schema = input_schema if input_schema is not None else input_schema_of(fn, label)
        input_validator = compile_schema(schema, f"{label} ({where(fn)}) input_schema")
        output, wraps = (output_schema, False) if output_schema is not None else output_schema_of(fn) or (None, False)
        output_validator = None if output is None else compile_schema(output, f"{label} ({where(fn)}) output_schema")
        check_parameters(fn, label, set(schema.get("properties", {})), set(schema.get("required", [])), "property")
        convert = build_arguments(fn) if input_schema is None else None
        return Tool(input_schema=schema, output_schema=output, title=title, annotations=annotations,
                    input_validator=input_validator, output_validator=output_validator, task=task,
                    ask_before_task=ask_before_task, convert_arguments=convert, wraps_output=wraps, **fields)

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
        unread = re.search(r"[{}][^{}]*[{}]?", TEMPLATE_VARIABLE.sub("", uri_template))
        if unread is not None:
            # {?q}, {/path}, {a,b} or a lone brace would stay literal text, and the template would match nothing.
            raise RegistryError(f"resource template {uri_template!r} ({where(fn)}): {unread.group()!r} is not a URI "
                                "variable; write {name} for one path segment or {+name} for the rest")
        # Every variable matches at least one character, so a matching URI always supplies all of them.
        variables = {var for _, var in TEMPLATE_VARIABLE.findall(uri_template)}
        check_parameters(fn, f"resource template {uri_template!r}", variables, variables, "URI variable")
        return ResourceTemplate(uri_template=uri_template, mime_type=mime_type, title=title, complete=complete,
                                resolve=resolve, **fields)

    return marking(build)


def prompt(
    name: str | Callable[..., Any] | None = None,
    *,
    arguments: Iterable[PromptArgument] | None = None,
    description: str | None = None,
    title: str | None = None,
    complete: Completer | None = None,
) -> Any:
    """Mark a function as a prompt (bare `@prompt`, or `@prompt(...)`); it returns the prompt's messages.

    Its arguments are `arguments`, else its parameters (required without a default) described by its docstring.
    """
    if callable(name):
        return prompt()(name)
    given = None if arguments is None else tuple(arguments)

    def build(fn: Callable[..., Any]) -> Prompt:
        fields = common_fields(fn, name, "prompt", description)
        label = f"prompt {fields['name']!r}"
        declared = given if given is not None else prompt_arguments(fn, label)
        check_parameters(fn, label, {arg.name for arg in declared}, {arg.name for arg in declared if arg.required},
                         "argument")
        return Prompt(arguments=declared, title=title, complete=complete, **fields)

    return marking(build)


def prompt_arguments(fn: Callable[..., Any], label: str) -> tuple[PromptArgument, ...]:
    """A prompt's arguments from fn's parameters (ctx aside) and the Args section of its docstring."""
    descriptions = doc_descriptions(fn)
    arguments = []
    for name, parameter in inspect.signature(fn).parameters.items():
        if name == "ctx":
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise RegistryError(f"{label} ({where(fn)}): parameter {name!r} (*args or **kwargs): name each argument, "
                                "or pass arguments=[PromptArgument(...), ...]")
        arguments.append(PromptArgument(name, descriptions.get(name, ""), parameter.default is parameter.empty))
    return tuple(arguments)

"""The checks a declaration passes once, at registration: its name, its JSON Schema, its function's signature."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonschema.exceptions import SchemaError

from flask_mcp_gevent.toolkit.validators import QuickValidator, SchemaValidator

NAME_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


class RegistryError(ValueError):
    """A tool, resource or prompt declaration that cannot be registered."""


def compile_schema(schema: dict[str, Any], what: str) -> QuickValidator:
    """Check a JSON Schema once and return its compiled validator (integers are ints; a quick check if simple)."""
    if not isinstance(schema, dict):
        raise RegistryError(f"{what}: the schema must be a dict, got {type(schema).__name__}")
    if schema.get("type") != "object":
        raise RegistryError(f"{what}: the schema's type must be 'object' (MCP requires it)")
    try:
        SchemaValidator.check_schema(schema)
    except SchemaError as exc:
        raise RegistryError(f"{what}: invalid JSON Schema: {exc.message}") from None
    return QuickValidator(schema)


def check_name(name: str, what: str) -> str:
    """Return name if it is a valid MCP name, else raise RegistryError."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise RegistryError(f"{what}: name {name!r} must match {NAME_PATTERN.pattern}")
    return name


def takes_context(fn: Callable[..., Any]) -> bool:
    """Tell whether fn declares a `ctx` parameter to receive the request context."""
    return "ctx" in inspect.signature(fn).parameters


def where(fn: Callable[..., Any]) -> str:
    """Name the file, line and function that fn is, for a registration error (or what __mcp_where__ says)."""
    # A function the package made for a declaration (a route made a tool) names that declaration instead.
    declared = getattr(fn, "__mcp_where__", None)
    if isinstance(declared, str):
        return declared
    code = getattr(fn, "__code__", None)
    if code is None:
        return repr(fn)
    path = Path(code.co_filename)
    if path.is_relative_to(Path.cwd()):
        path = path.relative_to(Path.cwd())
    return f"{path}:{code.co_firstlineno}, function {fn.__qualname__}"


def check_synchronous(fn: Callable[..., Any], label: str) -> None:
    """Reject an async function: the server calls it in a greenlet and would get an unawaited coroutine."""
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        raise RegistryError(f"{label} ({where(fn)}): must be a plain def, not async def; "
                            "it runs in its own greenlet, so blocking I/O is fine")


def parameter_problems(fn: Callable[..., Any], offered: set[str], required: set[str], noun: str) -> list[str]:
    """What stops fn(**arguments, ctx=...) from working for every set of arguments the declaration allows."""
    params = {n: p for n, p in inspect.signature(fn).parameters.items() if n != "ctx"}
    problems = [f"parameter {n!r} is positional-only, but arguments arrive by name"
                for n, p in params.items() if p.kind is p.POSITIONAL_ONLY]
    named = {n: p for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        problems += [f"{noun} {n!r} has no parameter of that name" for n in sorted((offered | required) - set(named))]
    problems += [f"parameter {n!r} has no default, so it must be a required {noun}"
                 for n, p in named.items() if p.default is p.empty and n not in required]
    return problems


def check_parameters(fn: Callable[..., Any], label: str, offered: set[str], required: set[str], noun: str) -> None:
    """Reject fn when its parameters do not match what its declaration offers and requires (ctx aside)."""
    problems = parameter_problems(fn, offered, required, noun)
    if problems:
        raise RegistryError(f"{label} ({where(fn)}): {'; '.join(problems)}")


def first_doc_line(fn: Callable[..., Any]) -> str:
    """Return the first line of fn's docstring, or an empty string."""
    doc = inspect.getdoc(fn) or ""
    return doc.splitlines()[0] if doc else ""


# What @tool(task=...) accepts (the tasks extension's task support).
TASK_SUPPORT = (None, "optional", "required")


def check_task_support(task: object, ask_before_task: object) -> None:
    """Refuse a task support other than None, "optional" or "required", or ask_before_task without one."""
    if task not in TASK_SUPPORT:
        raise RegistryError(f"@tool(task=...) must be None, 'optional' or 'required', not {task!r}")
    if ask_before_task and task is None:
        raise RegistryError("@tool(ask_before_task=True) needs task='optional' or task='required'")

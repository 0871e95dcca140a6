"""The registry behind the decorators: tools, resources and prompts, checked once.

Decorators only mark a function with its spec; `Registry.discover()` collects the
marked functions of a set of modules into one registry per app, so two apps in one
process never share state and importing a module twice never registers twice.
On a fleet, a change made while the server runs is named by reference (an importable
function, or a factory and JSON arguments), so that every worker can make it too.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

__all__ = [
    "Prompt",
    "PromptArgument",
    "Registry",
    "RegistryError",
    "Resource",
    "ResourceTemplate",
    "Tool",
    "prompt",
    "resource",
    "resource_template",
    "tool",
]

NAME_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
# A URI template variable: {name} for one path segment, {+name} for the rest (RFC 6570 level 1 and reserved).
TEMPLATE_VARIABLE = re.compile(r"\{(\+?)([A-Za-z0-9_]+)\}")
MARK = "__mcp_spec__"


class RegistryError(ValueError):
    """A tool, resource or prompt declaration that cannot be registered."""


def compile_schema(schema: dict[str, Any], what: str) -> Draft202012Validator:
    """Check a JSON Schema once and return its compiled validator."""
    if not isinstance(schema, dict):
        raise RegistryError(f"{what}: the schema must be a dict, got {type(schema).__name__}")
    if schema.get("type") != "object":
        raise RegistryError(f"{what}: the schema's type must be 'object' (MCP requires it)")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise RegistryError(f"{what}: invalid JSON Schema: {exc.message}") from None
    return Draft202012Validator(schema)


def check_name(name: str, what: str) -> str:
    """Return name if it is a valid MCP name, else raise RegistryError."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise RegistryError(f"{what}: name {name!r} must match {NAME_PATTERN.pattern}")
    return name


def takes_context(fn: Callable[..., Any]) -> bool:
    """Tell whether fn declares a `ctx` parameter to receive the request context."""
    return "ctx" in inspect.signature(fn).parameters


def where(fn: Callable[..., Any]) -> str:
    """Name the file, line and function that fn is, for a registration error."""
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


@dataclass(frozen=True)
class Tool:
    """A callable tool: its name, schemas and the function that runs it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    fn: Callable[..., Any]
    output_schema: dict[str, Any] | None = None
    title: str | None = None
    annotations: dict[str, Any] | None = None
    input_validator: Draft202012Validator = field(repr=False, compare=False, default=None)
    output_validator: Draft202012Validator | None = field(repr=False, compare=False, default=None)
    wants_context: bool = False


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
    complete: Callable[..., Iterable[str]] | None = None
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
    complete: Callable[..., Iterable[str]] | None = None
    wants_context: bool = False


def resolve_reference(reference: str) -> Any:
    """Import what a "module:qualname" reference names."""
    module_name, _, qualname = reference.partition(":")
    value: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def reference_to(value: Any) -> str | None:
    """Name a module-level function as "module:qualname", or None when importing that name would not find it."""
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
    if not module or not qualname or "<" in qualname:  # <locals>, <lambda>: nothing another process can import
        return None
    reference = f"{module}:{qualname}"
    try:
        found = resolve_reference(reference)
    except (ImportError, AttributeError):
        return None
    return reference if found is value else None


def not_replicable(what: str) -> RegistryError:
    """The error for a run-time change that other workers could not make, saying what to do instead."""
    return RegistryError(
        f"{what} cannot reach the other workers: they make run-time changes by importing what they name. "
        "Register a module-level function (registry.add_function(fn)), or build it with a module-level factory "
        "(registry.add_from(factory, **arguments), arguments as JSON values)"
    )


def json_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Return arguments if JSON carries them unchanged to other workers, else raise RegistryError."""
    try:
        same = json.loads(json.dumps(arguments)) == arguments
    except (TypeError, ValueError):
        same = False
    if not same:
        raise not_replicable("a factory's arguments that are not plain JSON values")
    return arguments


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
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as a tool with an explicit JSON Schema for its arguments."""
    if callable(name):
        raise RegistryError("use @tool(input_schema={...}), not bare @tool")
    if input_schema is None:
        raise RegistryError("@tool needs input_schema={...}: an explicit JSON Schema for the arguments")

    def build(fn: Callable[..., Any]) -> Tool:
        fields = common_fields(fn, name, "tool", description)
        label = f"tool {fields['name']!r}"
        input_validator = compile_schema(input_schema, f"{label} input_schema")
        output_validator = None if output_schema is None else compile_schema(output_schema, f"{label} output_schema")
        check_parameters(fn, label, set(input_schema.get("properties", {})), set(input_schema.get("required", [])),
                         "property")
        return Tool(input_schema=input_schema, output_schema=output_schema, title=title, annotations=annotations,
                    input_validator=input_validator, output_validator=output_validator, **fields)

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
    complete: Callable[..., Iterable[str]] | None = None,
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
    complete: Callable[..., Iterable[str]] | None = None,
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


class Registry:
    """The tools, resources and prompts one server exposes, in registration order."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        self._listeners: list[Callable[[str], None]] = []
        self._lock = threading.Lock()
        # Set on a fleet: takes a change made here to every worker (before listeners hear of it), returns its version.
        self.replicator: Callable[[dict[str, Any]], int] | None = None
        # The version of the last replicated change to each (kind, key), so a late or repeated one is ignored.
        self._versions: dict[tuple[str, str], int] = {}

    def add(self, spec: Tool | Resource | ResourceTemplate | Prompt) -> None:
        """Register one spec, rejecting duplicates, and tell listeners its list changed."""
        self._add(spec, None)

    def remove(self, kind: str, key: str) -> bool:
        """Remove a registered tool, resource, resource template or prompt; tell listeners."""
        table = self._table_named(kind)
        if self.replicator is None:
            with self._lock:
                removed = table.pop(key, None) is not None
        else:
            removed = key in table
            if removed:
                version = self.replicator({"action": "remove", "kind": kind, "key": key})
                self._place(kind, key, None, version)
        if removed:
            self._notify(kind)
        return removed

    def add_function(self, fn: Callable[..., Any]) -> None:
        """Register a function that one of the decorators has marked."""
        self.add(spec_of(fn))

    def add_from(self, factory: Callable[..., Callable[..., Any]], **arguments: Any) -> None:
        """Register the marked function factory(**arguments) returns; on a fleet every worker calls it alike."""
        recipe = None
        if self.replicator is not None:
            reference = reference_to(factory)
            if reference is None:
                raise not_replicable(f"factory {getattr(factory, '__qualname__', factory)!r}")
            recipe = {"factory": reference, "arguments": json_arguments(arguments)}
        self._add(spec_of(factory(**arguments)), recipe)

    def apply(self, change: dict[str, Any], version: int) -> None:
        """Make a change that another worker made; listeners are not told (that worker tells every session)."""
        spec = None
        if change["action"] == "add":
            if "factory" in change:
                fn = resolve_reference(change["factory"])(**change["arguments"])
            else:
                fn = resolve_reference(change["function"])
            spec = spec_of(fn)
            _, key, kind = self._table_for(spec)
            if (kind, key) != (change["kind"], change["key"]):
                raise RegistryError(f"{change['kind']} {change['key']!r} was rebuilt here as {kind} {key!r}")
        self._place(change["kind"], change["key"], spec, version)

    def _add(self, spec: Any, recipe: dict[str, Any] | None) -> None:
        """Register spec here, and first on every worker when there is a fleet; tell listeners."""
        table, key, kind = self._table_for(spec)
        if self.replicator is None:
            with self._lock:
                if key in table:
                    raise RegistryError(f"duplicate {kind} {key!r}")
                table[key] = spec
        else:
            if key in table:
                raise RegistryError(f"duplicate {kind} {key!r}")
            if recipe is None:
                reference = reference_to(spec.fn)
                if reference is None or getattr(resolve_reference(reference), MARK, None) is not spec:
                    raise not_replicable(f"{kind} {key!r} (its function {getattr(spec.fn, '__qualname__', spec.fn)!r} "
                                         "is a closure or lambda, or not importable by that name)")
                recipe = {"function": reference}
            version = self.replicator({"action": "add", "kind": kind, "key": key, **recipe})
            self._place(kind, key, spec, version)
        self._notify(kind)

    def _place(self, kind: str, key: str, spec: Any, version: int) -> None:
        """Set (spec) or clear (None) one entry, unless a later change to it was already made here."""
        with self._lock:
            if version <= self._versions.get((kind, key), 0):
                return
            self._versions[(kind, key)] = version
            table = self._table_named(kind)
            if spec is None:
                table.pop(key, None)
            else:
                table[key] = spec

    def add_module(self, module: Any) -> int:
        """Register every marked function defined in module; return how many."""
        count = 0
        for value in vars(module).values():
            spec = getattr(value, MARK, None)
            if spec is not None and getattr(value, "__module__", None) == module.__name__:
                self.add(spec)
                count += 1
        return count

    def on_change(self, listener: Callable[[str], None]) -> None:
        """Call listener(kind) whenever a tool, resource or prompt is added or removed."""
        self._listeners.append(listener)

    @classmethod
    def discover(cls, package: str = "mcp_tools", plugins: Iterable[str] = ()) -> Registry:
        """Build a registry from every public module of package plus the plugin modules."""
        registry = cls()
        pkg = importlib.import_module(package)
        names = sorted(
            f"{package}.{info.name}"
            for info in pkgutil.iter_modules(pkg.__path__)
            if not info.name.startswith("_")
        )
        for module_name in [*names, *plugins]:
            registry.add_module(importlib.import_module(module_name))
        return registry

    def _table_named(self, kind: str) -> dict[str, Any]:
        """The table of one kind: "tool", "resource", "resource template" or "prompt"."""
        return {
            "tool": self.tools,
            "resource": self.resources,
            "resource template": self.templates,
            "prompt": self.prompts,
        }[kind]

    def _table_for(self, spec: Any) -> tuple[dict[str, Any], str, str]:
        """Return the table, key and kind name that spec belongs to."""
        if isinstance(spec, Tool):
            return self.tools, spec.name, "tool"
        if isinstance(spec, Resource):
            return self.resources, spec.uri, "resource"
        if isinstance(spec, ResourceTemplate):
            return self.templates, spec.uri_template, "resource template"
        if isinstance(spec, Prompt):
            return self.prompts, spec.name, "prompt"
        raise RegistryError(f"cannot register {spec!r}")

    def _notify(self, kind: str) -> None:
        """Tell every listener that the list of `kind` changed."""
        for listener in list(self._listeners):
            listener(kind)

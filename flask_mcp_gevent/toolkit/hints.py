"""A tool's schemas from its type hints, and descriptions from docstrings.

Covers int, float, str, bool, None, list[...], tuple[...], dict[str, ...], Optional and unions, Literal, Enum,
datetime, date, UUID, Annotated (a string beside the type is its description), TypedDict and dataclasses (their
fields described by Annotated or by the class docstring's "Attributes:" section); `ctx` never enters the schema.
A parameter whose hint has no JSON Schema (a class of its own, set, bytes) is refused with the function and
parameter named; a return hint without one only means the tool declares no outputSchema.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import re
import types
import typing
import uuid
from collections.abc import Callable
from typing import Any

from flask_mcp_gevent.toolkit.checks import RegistryError, where
from flask_mcp_gevent.toolkit.content import ToolResult

__all__ = ["doc_descriptions", "hints_of", "input_schema_of", "output_schema_of", "resolved_hints", "type_schema"]

# The section of a Google-style docstring that describes the parameters (a class's: its fields), and one
# `name (type): text` line of it.
ARGS_HEADERS = ("Args:", "Arguments:", "Parameters:")
FIELDS_HEADERS = ("Attributes:", *ARGS_HEADERS)
ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
SCALARS: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
# Values JSON carries as strings, by the JSON Schema format that says which (datetime before date: it is one).
FORMATTED: tuple[tuple[type, str], ...] = ((datetime.datetime, "date-time"), (datetime.date, "date"),
                                           (uuid.UUID, "uuid"))


class Unsupported(Exception):
    """A hint with no JSON Schema; its message names the hint."""


def doc_descriptions(owner: Any) -> dict[str, str]:
    """Each name's description from a Google-style docstring: a function's "Args:", a class's "Attributes:" too."""
    headers = FIELDS_HEADERS if isinstance(owner, type) else ARGS_HEADERS
    # A class's own docstring only: inspect.getdoc would give a TypedDict without one dict's.
    doc = owner.__doc__ if isinstance(getattr(owner, "__doc__", None), str) else ""
    lines = inspect.cleandoc(doc).splitlines()
    found: dict[str, str] = {}
    inside, indent, current = False, None, None
    for line in lines:
        stripped = line.strip()
        if stripped in headers:
            inside, indent, current = True, None, None
            continue
        if not inside:
            continue
        if not stripped:
            current = None
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:  # the next section (Returns:, Raises:) or prose
            inside = False
            continue
        match = ARG_LINE.match(stripped)
        if match and (indent is None or depth == indent):
            indent, current = depth, match.group(1).lstrip("*")
            found[current] = match.group(2).strip()
        elif current is not None:  # a continuation line of the current parameter
            found[current] = f"{found[current]} {stripped}".strip()
    return found


def type_schema(hint: Any, enclosing: frozenset[Any] = frozenset()) -> dict[str, Any]:
    """The JSON Schema of one type hint; raise Unsupported when it has none.

    enclosing: the TypedDicts and dataclasses being described around this hint, so a class that contains itself
    (a tree of nodes) is refused rather than described forever.
    """
    if hint is Any:
        return {}
    if hint in SCALARS:
        return {"type": SCALARS[hint]}
    for kind, format_name in FORMATTED:
        if hint is kind:
            return {"type": "string", "format": format_name}
    if hint is ToolResult:
        raise Unsupported("ToolResult (a result's content blocks, not a JSON value)")
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.NotRequired, typing.Required):  # a TypedDict key's marks: its required keys say it
        return type_schema(arguments[0], enclosing)
    if origin is typing.Annotated:
        schema = type_schema(arguments[0], enclosing)
        notes = [note for note in arguments[1:] if isinstance(note, str)]
        return {**schema, "description": notes[0]} if notes else schema
    if origin is typing.Literal:
        if not all(isinstance(value, str | int | float | bool) or value is None for value in arguments):
            raise Unsupported(f"{hint!r} (Literal values must be strings, numbers, booleans or None)")
        return {"enum": list(arguments)}
    if origin in (typing.Union, types.UnionType):
        choices = [type_schema(argument, enclosing) for argument in arguments]
        return choices[0] if len(choices) == 1 else {"anyOf": choices}
    if hint is list or origin is list:
        return {"type": "array", "items": type_schema(arguments[0], enclosing)} if arguments else {"type": "array"}
    if hint is tuple or origin is tuple:
        return tuple_schema(hint, arguments, enclosing)
    if hint is dict or origin is dict:
        if arguments and arguments[0] is not str:
            raise Unsupported(f"{hint!r} (JSON object keys are strings: use dict[str, ...])")
        values = type_schema(arguments[1], enclosing) if arguments else {}
        return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return enum_schema(hint)
    if typing.is_typeddict(hint):
        return typeddict_schema(hint, within(hint, enclosing))
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return dataclass_schema(hint, within(hint, enclosing))
    raise Unsupported(repr(hint))


def within(cls: Any, enclosing: frozenset[Any]) -> frozenset[Any]:
    """enclosing with cls added; Unsupported when cls is already being described (it contains itself)."""
    if cls in enclosing:
        raise Unsupported(f"{cls.__qualname__} (it contains itself, which a schema from hints cannot describe)")
    return enclosing | {cls}


def field_hints(cls: Any) -> dict[str, Any]:
    """A TypedDict's or dataclass's field hints, string annotations resolved; Unsupported when one names nothing."""
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as problem:  # NameError, or a TypeError from a malformed annotation
        raise Unsupported(f"{cls.__qualname__} (cannot read its field hints: {problem})") from None


def tuple_schema(hint: Any, arguments: tuple[Any, ...], enclosing: frozenset[Any]) -> dict[str, Any]:
    """A tuple is a JSON array: tuple[X, ...] of any length, tuple[X, Y] of exactly those items."""
    if hint is tuple:
        return {"type": "array"}
    if len(arguments) == 2 and arguments[1] is Ellipsis:
        return {"type": "array", "items": type_schema(arguments[0], enclosing)}
    # tuple[()] has no arguments: the empty array.
    return {"type": "array", "prefixItems": [type_schema(argument, enclosing) for argument in arguments],
            "minItems": len(arguments), "maxItems": len(arguments)}


def enum_schema(cls: type[enum.Enum]) -> dict[str, Any]:
    """An Enum is one of its members' values, with their JSON type when they all have the same."""
    values = [member.value for member in cls]
    if not all(type(value) in SCALARS for value in values):
        raise Unsupported(f"{cls!r} (an Enum's values must be strings, numbers, booleans or None)")
    kinds = {SCALARS[type(value)] for value in values}
    return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}


def is_marked(hint: Any, mark: Any) -> bool:
    """Whether a TypedDict key's hint carries Required or NotRequired, under Annotated too."""
    while typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return typing.get_origin(hint) is mark


def typeddict_schema(cls: Any, enclosing: frozenset[Any]) -> dict[str, Any]:
    """The object schema of a TypedDict: its keys, required unless marked NotRequired (or total=False)."""
    hints = field_hints(cls)
    # Read from the hints, not __required_keys__: with string annotations Python 3.11 cannot see the marks.
    required = {name for name, hint in hints.items()
                if is_marked(hint, typing.Required) or (cls.__total__ and not is_marked(hint, typing.NotRequired))}
    return object_schema(hints, required, {}, doc_descriptions(cls), enclosing)


def dataclass_schema(cls: type, enclosing: frozenset[Any]) -> dict[str, Any]:
    """The object schema of a dataclass: its fields, those without a default required.

    A field with init=False is readOnly: a result carries it, arguments cannot set it (it is dropped if sent).
    """
    hints = field_hints(cls)
    fields = dataclasses.fields(cls)
    required = {field.name for field in fields if field.init
                and field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING}
    defaults = {field.name: field.default for field in fields if field.default is not dataclasses.MISSING}
    schema = object_schema({field.name: hints[field.name] for field in fields}, required, defaults,
                           doc_descriptions(cls), enclosing)
    for field in fields:
        if not field.init:
            schema["properties"][field.name]["readOnly"] = True
    return schema


def object_schema(hints: dict[str, Any], required: set[str], defaults: dict[str, Any],
                  descriptions: dict[str, str], enclosing: frozenset[Any]) -> dict[str, Any]:
    """An object schema with one property per hint; no other property allowed."""
    properties: dict[str, Any] = {}
    for name, hint in hints.items():
        try:
            schema = type_schema(hint, enclosing)
        except Unsupported as problem:
            raise Unsupported(f"{problem} in field {name!r}") from None
        properties[name] = with_extras(schema, descriptions.get(name), defaults.get(name, inspect.Parameter.empty))
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = [name for name in hints if name in required]
    result["additionalProperties"] = False
    return result


def with_extras(schema: dict[str, Any], description: str | None, default: Any) -> dict[str, Any]:
    """Add a description (unless the hint gave one) and a JSON default to a property's schema."""
    schema = dict(schema)
    if description and "description" not in schema:
        schema["description"] = description
    if default is not inspect.Parameter.empty and is_json(default):
        schema["default"] = default.value if isinstance(default, enum.Enum) else default
    return schema


def is_json(value: Any) -> bool:
    """Whether value can stand in a schema as a JSON default."""
    if isinstance(value, enum.Enum):
        return is_json(value.value)
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list | tuple):
        return all(is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and is_json(item) for key, item in value.items())
    return False


def hints_of(fn: Callable[..., Any], returned: bool) -> dict[str, Any]:
    """fn's parameter hints (returned=False) or its return hint (True), string annotations resolved.

    Apart, so that a return hint that names nothing importable costs a tool its outputSchema, not its inputSchema.
    """
    annotations = getattr(fn, "__annotations__", None) or {}
    chosen = {name: hint for name, hint in annotations.items() if (name == "return") is returned}
    return typing.get_type_hints(types.SimpleNamespace(__annotations__=chosen), include_extras=True,
                                 globalns=getattr(inspect.unwrap(fn), "__globals__", {}))


def resolved_hints(fn: Callable[..., Any], label: str) -> dict[str, Any]:
    """fn's parameter hints with string annotations resolved; a name that cannot be resolved is refused."""
    try:
        return hints_of(fn, returned=False)
    except Exception as problem:  # NameError, or a TypeError from a malformed annotation
        raise RegistryError(f"{label} ({where(fn)}): cannot read its type hints: {problem}") from None


def input_schema_of(fn: Callable[..., Any], label: str) -> dict[str, Any]:
    """The input schema fn's hints and docstring describe; RegistryError names what cannot be described."""
    hints = resolved_hints(fn, label)
    descriptions = doc_descriptions(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in inspect.signature(fn).parameters.items():
        if name == "ctx":
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise RegistryError(f"{label} ({where(fn)}): parameter {name!r} (*args or **kwargs) cannot be "
                                "described by hints; name each argument, or pass input_schema={...}")
        if name not in hints:
            raise RegistryError(f"{label} ({where(fn)}): parameter {name!r} has no type hint; "
                                "add one (int, str, list[str], ...) or pass input_schema={...}")
        try:
            schema = type_schema(hints[name])
        except Unsupported as problem:
            raise RegistryError(f"{label} ({where(fn)}): parameter {name!r} has a type with no JSON Schema: "
                                f"{problem}; use int, float, str, bool, list, dict, Literal, a TypedDict or a "
                                "dataclass, or pass input_schema={...}") from None
        properties[name] = with_extras(schema, descriptions.get(name), parameter.default)
        if parameter.default is parameter.empty:
            required.append(name)
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def output_schema_of(fn: Callable[..., Any]) -> tuple[dict[str, Any], bool] | None:
    """The outputSchema fn's return hint describes, and whether it wraps results as {"result": value}.

    An object type (a TypedDict, a dataclass, dict[str, X]) is the schema itself; any other type is wrapped, as
    MCP asks of structuredContent, which must be an object. None when the hint describes nothing a client can
    check: no hint, Any, None, ToolResult, a type with no JSON Schema, or a hint that cannot be read.
    """
    try:
        hint = hints_of(fn, returned=True).get("return", Any)
    except Exception:  # an unreadable return hint costs the tool its outputSchema, never its registration
        return None
    if hint is Any or hint is type(None):
        return None
    try:
        schema = type_schema(hint)
    except Unsupported:
        return None
    if schema.get("type") == "object":
        return schema, False
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True

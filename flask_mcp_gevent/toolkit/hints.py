"""A tool's input schema from its type hints, and its parameters' descriptions from its docstring.

Covers int, float, str, bool, None, list[...], dict[str, ...], Optional and unions, Literal, Enum, Annotated
(a string beside the type is its description), TypedDict and dataclasses; `ctx` never enters the schema.
A hint that has no JSON Schema (a class of its own, set, bytes) is refused with the function and parameter named.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

from flask_mcp_gevent.toolkit.checks import RegistryError, where

__all__ = ["build_arguments", "doc_descriptions", "input_schema_of"]

# The section of a Google-style docstring that describes the parameters, and one `name (type): text` line of it.
ARGS_HEADERS = ("Args:", "Arguments:", "Parameters:")
ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
SCALARS: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}


class Unsupported(Exception):
    """A hint with no JSON Schema; its message names the hint."""


def doc_descriptions(fn: Callable[..., Any]) -> dict[str, str]:
    """Each parameter's description from the "Args:" section of fn's docstring (Google style)."""
    lines = (inspect.getdoc(fn) or "").splitlines()
    found: dict[str, str] = {}
    inside, indent, current = False, None, None
    for line in lines:
        stripped = line.strip()
        if stripped in ARGS_HEADERS:
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


def type_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of one type hint; raise Unsupported when it has none."""
    if hint is Any:
        return {}
    if hint in SCALARS:
        return {"type": SCALARS[hint]}
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.NotRequired, typing.Required):  # a TypedDict key's marks: its required keys say it
        return type_schema(arguments[0])
    if origin is typing.Annotated:
        schema = type_schema(arguments[0])
        notes = [note for note in arguments[1:] if isinstance(note, str)]
        return {**schema, "description": notes[0]} if notes else schema
    if origin is typing.Literal:
        if not all(isinstance(value, str | int | float | bool) or value is None for value in arguments):
            raise Unsupported(f"{hint!r} (Literal values must be strings, numbers, booleans or None)")
        return {"enum": list(arguments)}
    if origin in (typing.Union, types.UnionType):
        choices = [type_schema(argument) for argument in arguments]
        return choices[0] if len(choices) == 1 else {"anyOf": choices}
    if hint is list or origin is list:
        return {"type": "array", "items": type_schema(arguments[0])} if arguments else {"type": "array"}
    if hint is dict or origin is dict:
        if arguments and arguments[0] is not str:
            raise Unsupported(f"{hint!r} (JSON object keys are strings: use dict[str, ...])")
        if not arguments:
            return {"type": "object"}
        return {"type": "object", "additionalProperties": type_schema(arguments[1])}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [member.value for member in hint]}
    if typing.is_typeddict(hint):
        return typeddict_schema(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return dataclass_schema(hint)
    raise Unsupported(repr(hint))


def typeddict_schema(cls: Any) -> dict[str, Any]:
    """The object schema of a TypedDict: its keys, required unless marked NotRequired (or total=False)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    # Read from the hints, not __required_keys__: with string annotations Python 3.11 cannot see the marks.
    required = {name for name, hint in hints.items()
                if typing.get_origin(hint) is typing.Required
                or (cls.__total__ and typing.get_origin(hint) is not typing.NotRequired)}
    return object_schema(hints, required, {}, {})


def dataclass_schema(cls: type) -> dict[str, Any]:
    """The object schema of a dataclass: its fields, those without a default required."""
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = [field for field in dataclasses.fields(cls) if field.init]
    required = {field.name for field in fields
                if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING}
    defaults = {field.name: field.default for field in fields if field.default is not dataclasses.MISSING}
    return object_schema({field.name: hints[field.name] for field in fields}, required, defaults, {})


def object_schema(hints: dict[str, Any], required: set[str], defaults: dict[str, Any],
                  descriptions: dict[str, str]) -> dict[str, Any]:
    """An object schema with one property per hint; no other property allowed."""
    properties: dict[str, Any] = {}
    for name, hint in hints.items():
        try:
            schema = type_schema(hint)
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


def resolved_hints(fn: Callable[..., Any], label: str) -> dict[str, Any]:
    """fn's hints with string annotations resolved; a name that cannot be resolved is refused."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
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


def build_arguments(fn: Callable[..., Any]) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """A function that turns JSON arguments into the dataclasses and enums fn's hints ask for; None if none do."""
    hints = typing.get_type_hints(fn, include_extras=True)
    builders = {name: hint for name, hint in hints.items() if name != "return" and needs_building(hint)}
    if not builders:
        return None

    def build(arguments: dict[str, Any]) -> dict[str, Any]:
        return {name: built(builders[name], value) if name in builders else value
                for name, value in arguments.items()}

    return build


def needs_building(hint: Any) -> bool:
    """Whether a JSON value must be turned into something else to match hint (a dataclass or an enum, nested too)."""
    if typing.get_origin(hint) is typing.Annotated:
        return needs_building(typing.get_args(hint)[0])
    if isinstance(hint, type) and (issubclass(hint, enum.Enum) or dataclasses.is_dataclass(hint)):
        return True
    return any(needs_building(argument) for argument in typing.get_args(hint))


def built(hint: Any, value: Any) -> Any:
    """value (valid against hint's schema) as hint's dataclass or enum, recursively."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return built(arguments[0], value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        field_hints = typing.get_type_hints(hint, include_extras=True)
        return hint(**{name: built(field_hints[name], item) for name, item in value.items()})
    if (hint is list or origin is list) and arguments and isinstance(value, list):
        return [built(arguments[0], item) for item in value]
    if origin is dict and arguments and isinstance(value, dict):
        return {key: built(arguments[1], item) for key, item in value.items()}
    if origin in (typing.Union, types.UnionType):
        for choice in arguments:
            if matches_shape(choice, value):
                return built(choice, value)
    return value


def matches_shape(hint: Any, value: Any) -> bool:
    """Whether value could be of hint's kind (enough to pick a union's member for building)."""
    if value is None:
        return hint is type(None)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return isinstance(value, dict)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return value in {member.value for member in hint}
    return hint is not type(None)

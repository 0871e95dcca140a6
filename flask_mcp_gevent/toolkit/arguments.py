"""A tool's JSON arguments made into what its hints name (its results go back through protocol/tools.json_ready).

A tool whose input schema comes from its hints gets its arguments as the hints say: a dataclass, an Enum member,
a datetime, date or UUID, a tuple, nested in lists, dicts, TypedDicts and unions too. A value the schema lets
through but that cannot become its type ("2024-13-45" for a date: JSON Schema's "format" is not checked) raises
InvalidArgument naming its path, which the server answers as it answers a schema violation.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import types
import typing
import uuid
from collections.abc import Callable
from typing import Any

from flask_mcp_gevent.toolkit.hints import hints_of

__all__ = ["InvalidArgument", "build_arguments"]

# What a JSON string becomes for each type that JSON carries as a string, and what the string must look like.
FROM_STRING: dict[Any, tuple[Callable[[str], Any], str]] = {
    datetime.datetime: (datetime.datetime.fromisoformat, "an ISO 8601 date-time, as 2024-05-01T12:30:00+00:00"),
    datetime.date: (datetime.date.fromisoformat, "an ISO 8601 date, as 2024-05-01"),
    uuid.UUID: (uuid.UUID, "a UUID, as 12345678-1234-5678-1234-567812345678"),
}
# The JSON type a value of each hint arrives as, enough to pick a union's member to build.
JSON_KIND: dict[Any, type | tuple[type, ...]] = {str: str, int: int, float: (int, float), bool: bool,
                                                   type(None): type(None), list: list, tuple: list, dict: dict}


class InvalidArgument(ValueError):
    """An argument valid by the schema that cannot become the type its hint names."""

    def __init__(self, path: list[str | int], message: str) -> None:
        """Keep where in the arguments the value is ("/when", "/items/0") and what is wrong with it."""
        self.path = "/" + "/".join(str(part) for part in path)
        self.message = message
        super().__init__(f"{self.path}: {message}")


def build_arguments(fn: Callable[..., Any]) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """A function that turns JSON arguments into the values fn's hints name; None if they all stay as they are."""
    hints = hints_of(fn, returned=False)
    builders = {name: hint for name, hint in hints.items() if name != "ctx" and needs_building(hint)}
    if not builders:
        return None

    def build(arguments: dict[str, Any]) -> dict[str, Any]:
        return {name: built(builders[name], value, [name]) if name in builders else value
                for name, value in arguments.items()}

    return build


def needs_building(hint: Any) -> bool:
    """Whether a JSON value must be turned into something else to match hint (nested too)."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return needs_building(arguments[0])
    if is_from_string(hint) or hint is tuple or origin is tuple:
        return True
    if origin is typing.Literal:  # jsonschema's enum takes 1.0 for 1: an integer choice needs checking
        return any(type(choice) is int for choice in arguments)
    if isinstance(hint, type) and (issubclass(hint, enum.Enum) or dataclasses.is_dataclass(hint)):
        return True
    if typing.is_typeddict(hint):
        return any(needs_building(field) for field in typing.get_type_hints(hint, include_extras=True).values())
    return any(needs_building(argument) for argument in arguments if argument is not Ellipsis)


def built(hint: Any, value: Any, path: list[str | int]) -> Any:
    """value (valid against hint's schema) as hint's type, recursively; InvalidArgument when it cannot be."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated or origin in (typing.Required, typing.NotRequired):
        return built(arguments[0], value, path)
    if is_from_string(hint) and isinstance(value, str):
        parse, expected = FROM_STRING[hint]
        try:
            return parse(value)
        except ValueError:
            raise InvalidArgument(path, f"{value!r} is not {expected}") from None
    if origin is typing.Literal:
        if not any(is_literal_choice(value, choice) for choice in arguments):
            raise InvalidArgument(path, f"{value!r} is not one of {list(arguments)}")
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            raise InvalidArgument(path, f"{value!r} is not one of {[member.value for member in hint]}") from None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint) and isinstance(value, dict):
        return built_dataclass(hint, value, path)
    if typing.is_typeddict(hint) and isinstance(value, dict):
        field_hints = typing.get_type_hints(hint, include_extras=True)
        return {name: built(field_hints[name], item, [*path, name]) if name in field_hints else item
                for name, item in value.items()}
    if (hint is list or origin is list) and arguments and isinstance(value, list):
        return [built(arguments[0], item, [*path, index]) for index, item in enumerate(value)]
    if (hint is tuple or origin is tuple) and isinstance(value, list):
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return tuple(built(arguments[0], item, [*path, index]) for index, item in enumerate(value))
        if len(arguments) == len(value):
            return tuple(built(argument, item, [*path, index])
                         for index, (argument, item) in enumerate(zip(arguments, value, strict=True)))
        return tuple(value)
    if origin is dict and arguments and isinstance(value, dict):
        return {key: built(arguments[1], item, [*path, key]) for key, item in value.items()}
    if origin in (typing.Union, types.UnionType):
        return built_union(arguments, value, path)
    return value


def built_dataclass(cls: type, value: dict[str, Any], path: list[str | int]) -> Any:
    """A dataclass from its JSON object; a readOnly (init=False) field sent along is dropped."""
    fields = {field.name: field for field in dataclasses.fields(cls)}
    field_hints = typing.get_type_hints(cls, include_extras=True)
    values = {name: built(field_hints[name], item, [*path, name]) for name, item in value.items()
              if name in fields and fields[name].init}
    try:
        return cls(**values)
    except (ValueError, TypeError) as refusal:  # __post_init__ refusing a value its schema could not describe
        raise InvalidArgument(path, f"not a valid {cls.__name__}: {refusal}") from None


def built_union(choices: tuple[Any, ...], value: Any, path: list[str | int]) -> Any:
    """value as the first member of a union whose shape it has and that it can become."""
    refusal: InvalidArgument | None = None
    for choice in choices:
        if not matches_shape(choice, value):
            continue
        try:
            return built(choice, value, path)
        except InvalidArgument as problem:
            refusal = refusal or problem
    if refusal is not None:
        raise refusal
    return value


def matches_shape(hint: Any, value: Any) -> bool:
    """Whether value could be of hint's kind (enough to pick a union's member for building)."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return matches_shape(typing.get_args(hint)[0], value)
    if origin is typing.Literal:
        return any(same_json(value, choice) for choice in typing.get_args(hint))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return any(same_json(value, member.value) for member in hint)
    if is_from_string(hint):
        return isinstance(value, str)
    if (isinstance(hint, type) and dataclasses.is_dataclass(hint)) or typing.is_typeddict(hint):
        return isinstance(value, dict)
    kind = JSON_KIND.get(origin or hint)
    if kind is not None:
        return type(value) in (kind if isinstance(kind, tuple) else (kind,))
    return True


def same_json(value: Any, choice: Any) -> bool:
    """Equal as JSON values are: true is not 1."""
    return (type(value) is bool) == (type(choice) is bool) and value == choice


def is_literal_choice(value: Any, choice: Any) -> bool:
    """value is choice as an argument: equal as JSON values, and never 1.0 for 1 (a number, not an integer)."""
    return same_json(value, choice) and not (type(value) is float and type(choice) is int)


def is_from_string(hint: Any) -> bool:
    """Whether JSON carries hint's values as strings (datetime, date, UUID)."""
    return any(hint is kind for kind in FROM_STRING)


"""A tool's input schema inferred from its type hints and docstring (flask_mcp_gevent/toolkit/hints.py, MCP.tool)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import pytest
from jsonschema import Draft202012Validator

from flask_mcp_gevent import MCP
from flask_mcp_gevent.toolkit.checks import RegistryError
from flask_mcp_gevent.toolkit.hints import doc_descriptions, input_schema_of


def schema(fn: Any) -> dict[str, Any]:
    """The inferred schema, which must itself be valid JSON Schema."""
    inferred = input_schema_of(fn, f"tool {fn.__name__!r}")
    Draft202012Validator.check_schema(inferred)
    return inferred


def prop(fn: Any, name: str = "x") -> dict[str, Any]:
    """The schema of one property, without its description."""
    found = dict(schema(fn)["properties"][name])
    found.pop("description", None)
    return found


class Point(TypedDict):
    x: int
    label: NotRequired[str]


@dataclass
class Box:
    width: float
    tags: list[str] = field(default_factory=list)
    depth: int = 1


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


# one test per supported type
def test_int_is_integer():
    def f(x: int): ...
    assert prop(f) == {"type": "integer"}


def test_float_is_number():
    def f(x: float): ...
    assert prop(f) == {"type": "number"}


def test_str_is_string():
    def f(x: str): ...
    assert prop(f) == {"type": "string"}


def test_bool_is_boolean_not_integer():
    def f(x: bool): ...
    assert prop(f) == {"type": "boolean"}


def test_a_list_has_its_items_schema():
    def f(x: list[int]): ...
    assert prop(f) == {"type": "array", "items": {"type": "integer"}}


def test_a_bare_list_is_any_array():
    def f(x: list): ...
    assert prop(f) == {"type": "array"}


def test_a_dict_is_an_object_with_its_values_schema():
    def f(x: dict[str, float], y: dict): ...
    assert prop(f) == {"type": "object", "additionalProperties": {"type": "number"}}
    assert prop(f, "y") == {"type": "object"}


def test_optional_and_union_with_none_allow_null():
    def f(x: Optional[int], y: str | None = None): ...  # noqa: UP045 (Optional is what the issue names)
    assert prop(f) == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert prop(f, "y") == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert schema(f)["required"] == ["x"]


def test_literal_is_an_enum():
    def f(x: Literal["asc", "desc"]): ...
    assert prop(f) == {"enum": ["asc", "desc"]}


def test_an_enum_class_is_an_enum_of_its_values():
    def f(x: Colour = Colour.RED): ...
    assert prop(f) == {"enum": ["red", "blue"], "default": "red"}


def test_a_default_makes_a_parameter_optional_and_is_stated():
    def f(x: int, y: int = 3): ...
    inferred = schema(f)
    assert inferred["required"] == ["x"]
    assert inferred["properties"]["y"]["default"] == 3
    assert inferred["additionalProperties"] is False


def test_a_typeddict_is_an_object_with_its_required_keys():
    def f(x: Point): ...
    assert prop(f) == {"type": "object", "properties": {"x": {"type": "integer"}, "label": {"type": "string"}},
                       "required": ["x"], "additionalProperties": False}


def test_a_dataclass_is_an_object_whose_fields_with_defaults_are_optional():
    def f(x: Box): ...
    assert prop(f) == {"type": "object", "properties": {
        "width": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string"}},
        "depth": {"type": "integer", "default": 1}}, "required": ["width"], "additionalProperties": False}


def test_annotated_text_is_the_description():
    def f(x: Annotated[int, "How many."]): ...
    assert schema(f)["properties"]["x"] == {"type": "integer", "description": "How many."}


def test_ctx_never_enters_the_schema():
    def f(ctx, x: int): ...
    assert set(schema(f)["properties"]) == {"x"}
    assert schema(f)["required"] == ["x"]


def test_string_annotations_are_resolved():
    # This module has `from __future__ import annotations`: every hint above is a string until resolved.
    def f(x: "list[Box]"): ...  # noqa: UP037 (a string on purpose)
    assert prop(f)["items"]["required"] == ["width"]


# descriptions
def test_parameter_descriptions_come_from_the_args_section():
    def f(a: int, b: str = "") -> None:
        """Do a thing.

        Args:
            a (int): The first value,
                over two lines.
            b: The second value.

        Returns:
            Nothing.
        """
    assert doc_descriptions(f) == {"a": "The first value, over two lines.", "b": "The second value."}
    assert schema(f)["properties"]["a"]["description"] == "The first value, over two lines."


def test_the_tool_description_is_the_docstrings_first_line():
    mcp = MCP()

    @mcp.tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first.
            b: The second.
        """
        return a + b

    tool = mcp.registry.tools["add"]
    assert tool.description == "Add two integers."
    assert tool.input_schema["properties"]["a"] == {"type": "integer", "description": "The first."}


def test_an_explicit_input_schema_wins_over_the_hints():
    mcp = MCP()
    explicit = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 3}}, "required": ["text"]}

    @mcp.tool(input_schema=explicit)
    def echo(text: str) -> str:
        return text

    assert mcp.registry.tools["echo"].input_schema is explicit


def test_a_dataclass_argument_arrives_as_the_dataclass():
    mcp = MCP()

    @mcp.tool
    def volume(box: Box, colour: Colour = Colour.RED) -> str:
        """Describe a box."""
        return f"{type(box).__name__} {box.width} {colour.name}"

    tool = mcp.registry.tools["volume"]
    assert tool.fn(box={"width": 2.5}, colour="blue") == "Box 2.5 BLUE"
    assert volume(Box(1.0)) == "Box 1.0 RED"  # the decorator returns the function unchanged


# one test per refusal
def test_a_parameter_without_a_hint_is_refused_naming_the_function_and_parameter():
    mcp = MCP()
    with pytest.raises(RegistryError, match=r"tool 'greet' .*function .*greet\): parameter 'name' has no type hint"):
        @mcp.tool
        def greet(name):
            return name


class Widget:
    """A class of the app's own: no JSON Schema describes it."""


@dataclass
class Holder:
    items: set[str]


def test_an_unsupported_type_is_refused_naming_the_function_and_parameter():
    mcp = MCP()
    with pytest.raises(RegistryError, match=r"tool 'make'.*parameter 'widget' has a type with no JSON Schema"):
        @mcp.tool
        def make(widget: Widget) -> None: ...


def test_a_set_is_refused():
    with pytest.raises(RegistryError, match="parameter 'x' has a type with no JSON Schema"):
        schema_of_set()


def schema_of_set() -> None:
    """Infer the schema of a function taking a set."""
    def f(x: set[int]): ...
    input_schema_of(f, "tool 'f'")


def test_a_dict_with_non_string_keys_is_refused():
    def f(x: dict[int, str]): ...
    with pytest.raises(RegistryError, match="keys are strings"):
        input_schema_of(f, "tool 'f'")


def test_args_and_kwargs_are_refused():
    def f(*names: str): ...
    with pytest.raises(RegistryError, match=r"parameter 'names' \(\*args or \*\*kwargs\)"):
        input_schema_of(f, "tool 'f'")


def test_a_hint_that_names_nothing_is_refused():
    def f(x: "NoSuchType"): ...  # noqa: F821, UP037
    with pytest.raises(RegistryError, match="cannot read its type hints"):
        input_schema_of(f, "tool 'f'")


def test_an_unsupported_type_inside_a_dataclass_names_the_field():
    def f(x: Holder): ...
    with pytest.raises(RegistryError, match="in field 'items'"):
        input_schema_of(f, "tool 'f'")

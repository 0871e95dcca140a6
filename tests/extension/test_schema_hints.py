"""A tool's schemas inferred from its type hints and docstring (flask_mcp_gevent/toolkit/hints.py, @tool, MCP.tool)."""

from __future__ import annotations

import datetime
import enum
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import pytest
from flask import Flask
from jsonschema import Draft202012Validator

from flask_mcp_gevent import MCP, PromptArgument, prompt, tool
from flask_mcp_gevent.toolkit.checks import RegistryError
from flask_mcp_gevent.toolkit.hints import doc_descriptions, input_schema_of
from flask_mcp_gevent.toolkit.specs import spec_of
from tests.extension.test_host_app import McpSession


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


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 2


class Mixed(enum.Enum):
    ONE = 1
    NAME = "name"


class Opaque(enum.Enum):
    PAIR = (1, 2)


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


def test_an_enum_class_is_an_enum_of_its_values_with_their_shared_type():
    def f(x: Colour = Colour.RED): ...
    assert prop(f) == {"type": "string", "enum": ["red", "blue"], "default": "red"}


def test_an_int_enum_is_an_integer_enum_and_a_mixed_one_has_no_type():
    def f(x: Size, y: Mixed): ...
    assert prop(f) == {"type": "integer", "enum": [1, 2]}
    assert prop(f, "y") == {"enum": [1, "name"]}


def test_an_enum_whose_values_are_not_json_is_refused():
    def f(x: Opaque): ...
    with pytest.raises(RegistryError, match="an Enum's values must be strings, numbers, booleans or None"):
        input_schema_of(f, "tool 'f'")


def test_a_datetime_is_a_date_time_string():
    def f(x: datetime.datetime): ...
    assert prop(f) == {"type": "string", "format": "date-time"}


def test_a_date_is_a_date_string():
    def f(x: datetime.date): ...
    assert prop(f) == {"type": "string", "format": "date"}


def test_a_uuid_is_a_uuid_string():
    def f(x: uuid.UUID): ...
    assert prop(f) == {"type": "string", "format": "uuid"}


def test_a_fixed_tuple_is_an_array_of_exactly_its_items():
    def f(x: tuple[int, str]): ...
    assert prop(f) == {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                       "minItems": 2, "maxItems": 2}


def test_a_tuple_with_an_ellipsis_is_an_array_of_its_item():
    def f(x: tuple[float, ...], y: tuple): ...
    assert prop(f) == {"type": "array", "items": {"type": "number"}}
    assert prop(f, "y") == {"type": "array"}


def test_a_dict_of_any_values_is_any_object():
    def f(x: dict[str, Any]): ...
    assert prop(f) == {"type": "object"}


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
    # The server converts valid JSON arguments before the call (protocol/tools.py run_tool).
    assert tool.fn(**tool.convert_arguments({"box": {"width": 2.5}, "colour": "blue"})) == "Box 2.5 BLUE"
    assert volume(Box(1.0)) == "Box 1.0 RED"  # the decorator returns the function unchanged


@pytest.mark.parametrize("arguments", [{"level": 1.0}, {"level": 2.0}, {"level": True}, {"level": 1, "label": 1.0}])
def test_an_integer_literal_takes_json_integers_only(arguments):
    app = Flask(__name__)
    mcp = MCP(app)

    @mcp.tool
    def pick(level: Literal[1, 2], label: Literal[1, "one"] | None = None) -> str:
        """Say what the call received."""
        return f"{level!r} {label!r}"

    try:
        session = McpSession(app.test_client(), None)
        assert session.call("pick", {"level": 2, "label": 1})["content"][0]["text"] == "2 1"
        # jsonschema's enum finds 1.0 equal to 1: the tool would receive the float its Literal does not name.
        refused = session.call("pick", arguments)
        assert refused["code"] == -32602 and "is not one of [1, " in refused["message"], refused
    finally:
        app.extensions["mcp"].shutdown()


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


# one decorator API: the toolkit's @tool and @prompt, and MCP's, which are sugar over them
def test_the_templates_tool_infers_the_same_schemas_as_mcp_tool():
    def plan(when: datetime.date, colour: Colour, box: Box, tags: tuple[str, ...] = ()) -> Point:
        """Plan a box.

        Args:
            when: The day.
            colour: The colour.
        """
        return {"x": 1}

    mcp = MCP()
    mcp.tool(plan)
    declared = mcp.registry.tools["plan"]
    marked = spec_of(tool(plan))
    assert marked.input_schema == declared.input_schema
    assert marked.input_schema["properties"]["when"] == {"type": "string", "format": "date", "description": "The day."}
    assert marked.output_schema == declared.output_schema == schema_of_point()
    assert marked.description == declared.description == "Plan a box."


def schema_of_point() -> dict[str, Any]:
    """Point's object schema, as an outputSchema."""
    return {"type": "object", "properties": {"x": {"type": "integer"}, "label": {"type": "string"}},
            "required": ["x"], "additionalProperties": False}


def test_the_templates_tool_works_bare_and_called():
    @tool
    def bare(n: int) -> int:
        """Double n."""
        return 2 * n

    @tool("named", description="Triple n.")
    def called(n: int) -> int:
        return 3 * n

    assert spec_of(bare).input_schema["required"] == ["n"] and spec_of(bare).name == "bare"
    assert (spec_of(called).name, spec_of(called).description) == ("named", "Triple n.")
    assert bare(2) == 4 and called(2) == 6


def test_an_explicit_schema_on_the_templates_tool_wins_and_arguments_stay_json():
    explicit = {"type": "object", "properties": {"when": {"type": "string"}}, "required": ["when"]}

    @tool(input_schema=explicit)
    def stamp(when: datetime.date) -> str:
        return str(when)

    assert spec_of(stamp).input_schema is explicit
    assert spec_of(stamp).convert_arguments is None


def test_a_bare_prompt_takes_its_parameters_described_by_its_docstring():
    @prompt
    def review(code: str, language: str = "") -> str:
        """Review code.

        Args:
            code: The code to review.
            language: Its language.
        """
        return code

    assert spec_of(review).arguments == (PromptArgument("code", "The code to review.", True),
                                         PromptArgument("language", "Its language.", False))


def test_explicit_prompt_arguments_win_over_the_parameters():
    arguments = [PromptArgument("code", "Given.", required=True)]

    @prompt(arguments=arguments)
    def review(code: str) -> str:
        """Review code.

        Args:
            code: From the docstring.
        """
        return code

    assert spec_of(review).arguments == tuple(arguments)
    mcp = MCP()
    mcp.prompt(arguments=arguments)(review)
    assert mcp.registry.prompts["review"].arguments == tuple(arguments)


def test_mcp_resource_used_bare_is_refused():
    with pytest.raises(RegistryError, match="not bare @mcp.resource"):
        @MCP().resource
        def config() -> str:
            return "{}"


def test_mcp_resource_takes_a_templates_completer_and_refuses_one_for_a_fixed_uri():
    mcp = MCP()

    def colours(name: str, value: str) -> list[str]:
        return [colour.value for colour in Colour if colour.value.startswith(value)]

    @mcp.resource("paint://{colour}", complete=colours)
    def paint(colour: str) -> str:
        return colour

    assert mcp.registry.templates["paint://{colour}"].complete is colours
    with pytest.raises(RegistryError, match="complete= and resolve= are for a URI with {variables}"):
        mcp.resource("paint://white", complete=colours)

"""A tool's outputSchema from its return hint, and results made JSON-ready to match it (hints.py, protocol/tools.py).

An object type is the schema itself; any other type is wrapped as {"result": ...}, as structuredContent is; a hint
with no JSON Schema gives no outputSchema and never stops the tool registering.
"""

from __future__ import annotations

import datetime
import enum
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict

import pytest

from flask_mcp_gevent import ToolResult, text, tool
from flask_mcp_gevent.protocol.tools import json_ready, shape_tool_result
from flask_mcp_gevent.toolkit.specs import spec_of

NEW = "2025-11-25"
REF = uuid.UUID("12345678-1234-5678-1234-567812345678")


class Stock(TypedDict):
    """How many of an item are left.

    Attributes:
        item: The item's name.
    """

    item: str
    count: Annotated[int, "How many are left."]


class Shade(enum.Enum):
    LIGHT = "light"
    DARK = "dark"


@dataclass
class Parcel:
    ref: uuid.UUID
    sent: datetime.datetime
    shade: Shade
    sizes: tuple[int, int]
    weight: float = field(init=False, default=1.5)


class Widget:
    """A class of the app's own: no JSON Schema describes it."""


def wrapped(schema: dict[str, Any]) -> dict[str, Any]:
    """The outputSchema of a tool whose results are {"result": value}."""
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


def declared(fn: Any) -> Any:
    """The spec @tool makes of fn."""
    return spec_of(tool(fn))


def call(fn: Any, value: Any) -> dict[str, Any]:
    """The structuredContent of fn's spec for a returned value, checked against its outputSchema."""
    spec = declared(fn)
    content = shape_tool_result(value, NEW, spec.wraps_output)["structuredContent"]
    assert spec.output_validator.is_valid(content), content
    return content


def test_a_typeddict_return_is_its_object_schema_and_its_result_validates():
    def stock() -> Stock:
        return {"item": "tea", "count": 3}

    assert declared(stock).output_schema == {
        "type": "object",
        "properties": {"item": {"type": "string", "description": "The item's name."},
                       "count": {"type": "integer", "description": "How many are left."}},
        "required": ["item", "count"], "additionalProperties": False}
    assert call(stock, stock()) == {"item": "tea", "count": 3}


def test_a_dataclass_return_is_its_object_schema_and_arrives_as_an_object():
    def parcel() -> Parcel:
        return Parcel(REF, datetime.datetime(2024, 5, 1, 12, 30), Shade.DARK, (2, 3))

    schema = declared(parcel).output_schema
    assert schema["type"] == "object" and schema["required"] == ["ref", "sent", "shade", "sizes"]
    assert schema["properties"]["weight"] == {"type": "number", "default": 1.5, "readOnly": True}
    assert call(parcel, parcel()) == {"ref": str(REF), "sent": "2024-05-01T12:30:00", "shade": "dark",
                                      "sizes": [2, 3], "weight": 1.5}


def test_a_dict_of_str_keys_is_an_object_schema():
    def counts() -> dict[str, int]:
        return {"a": 1}

    assert declared(counts).output_schema == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert call(counts, {"a": 1}) == {"a": 1}


def test_a_list_of_str_is_wrapped():
    def names() -> list[str]:
        return ["a", "b"]

    assert declared(names).output_schema == wrapped({"type": "array", "items": {"type": "string"}})
    assert call(names, ["a", "b"]) == {"result": ["a", "b"]}


@pytest.mark.parametrize(("hint", "schema", "value", "content"), [
    (int, {"type": "integer"}, 5, 5),
    (float, {"type": "number"}, 2.5, 2.5),
    (str, {"type": "string"}, "hi", "hi"),
    (bool, {"type": "boolean"}, True, True),
    (tuple[int, str], {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2,
                       "maxItems": 2}, (1, "a"), [1, "a"]),
    (Literal["up", "down"], {"enum": ["up", "down"]}, "up", "up"),
    (Shade, {"type": "string", "enum": ["light", "dark"]}, Shade.LIGHT, "light"),
    (datetime.datetime, {"type": "string", "format": "date-time"}, datetime.datetime(2024, 1, 2, 3, 4),
     "2024-01-02T03:04:00"),
    (datetime.date, {"type": "string", "format": "date"}, datetime.date(2024, 1, 2), "2024-01-02"),
    (uuid.UUID, {"type": "string", "format": "uuid"}, REF, str(REF)),
    (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}, None, None),
    (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}, "x", "x"),
], ids=["int", "float", "str", "bool", "tuple", "Literal", "Enum", "datetime", "date", "UUID", "Optional", "union"])
def test_a_type_that_is_not_an_object_is_wrapped_as_result(hint, schema, value, content):
    def fn(): ...
    fn.__annotations__["return"] = hint
    assert declared(fn).output_schema == wrapped(schema)
    assert call(fn, value) == {"result": content}


def test_an_optional_typeddict_wraps_a_dict_too():
    def maybe() -> Stock | None:
        return None

    assert declared(maybe).wraps_output
    assert call(maybe, {"item": "tea", "count": 1}) == {"result": {"item": "tea", "count": 1}}
    assert call(maybe, None) == {"result": None}


@pytest.mark.parametrize("hint", [None, Any, ToolResult, ToolResult | str, Widget, list[Widget], "NoSuchName"],
                         ids=["None", "Any", "ToolResult", "ToolResult-or-str", "a-class", "list-of-a-class",
                              "unresolvable"])
def test_a_return_hint_without_a_json_schema_gives_no_output_schema_and_the_tool_still_registers(hint):
    def fn(): ...
    fn.__annotations__["return"] = hint
    assert declared(fn).output_schema is None and declared(fn).output_validator is None


def test_no_return_hint_gives_no_output_schema():
    def fn():
        return 1

    assert declared(fn).output_schema is None


def test_an_explicit_output_schema_wins_over_the_return_hint():
    explicit = {"type": "object", "properties": {"n": {"type": "integer"}}}

    @tool(output_schema=explicit)
    def count() -> int:
        return 1

    assert spec_of(count).output_schema is explicit and not spec_of(count).wraps_output


def test_a_result_that_breaks_the_inferred_schema_fails_its_check():
    def stock() -> Stock:
        return {"item": "tea", "count": 1.0}  # type: ignore[typeddict-item]

    spec = declared(stock)
    assert not spec.output_validator.is_valid(shape_tool_result(stock(), NEW)["structuredContent"])


def test_json_ready_converts_nested_values_and_leaves_json_as_it_is():
    value = {"when": datetime.date(2024, 1, 2), "items": ({"ref": REF, "shade": Shade.DARK},), Shade.LIGHT: 1}
    assert json_ready(value) == {"when": "2024-01-02", "items": [{"ref": str(REF), "shade": "dark"}], "light": 1}
    plain = {"a": [1, 2.5, "x", None, True]}
    assert json_ready(plain) == plain


def test_the_text_block_shows_the_json_ready_value():
    result = shape_tool_result(Parcel(REF, datetime.datetime(2024, 5, 1), Shade.LIGHT, (1, 2)), NEW)
    assert '"shade":"light"' in result["content"][0]["text"] and '"sizes":[1,2]' in result["content"][0]["text"]


def test_a_tool_result_keeps_its_blocks_and_its_structured_content_is_made_json_ready():
    result = shape_tool_result(ToolResult(content=[text("a")], structured={"day": datetime.date(2024, 1, 2)}), NEW)
    assert result["content"] == [text("a")] and result["structuredContent"] == {"day": "2024-01-02"}

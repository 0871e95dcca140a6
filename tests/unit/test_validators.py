"""The quick schema check (toolkit/validators.py) never accepts what SchemaValidator (Draft 2020-12) refuses.

Thousands of generated values against schemas using every keyword it knows, and the seed tools' own schemas: the
QuickValidator's verdict equals SchemaValidator's every time, and the quick check alone says "valid" only when
SchemaValidator does. Schemas with any other constraining keyword get no quick check at all. SchemaValidator is
jsonschema's Draft 2020-12 except that an integer is an int: no whole float, no bool.
"""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.toolkit.validators import QuickValidator, SchemaValidator, quick_check

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"text": {"type": "string", "description": "d"}}, "required": ["text"],
     "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10}}},
    {"type": "object", "properties": {"f": {"type": "number", "minimum": -1.5, "maximum": 2.5}}},
    {"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 4}}},
    {"type": "object", "properties": {"e": {"enum": ["x", "y", 1, True, None]}}},
    {"type": "object", "properties": {"e": {"type": "string", "enum": ["x", "y"]}}, "required": ["e"]},
    {"type": "object", "properties": {"l": {"type": "array", "items": {"type": "integer"}}}},
    {"type": "object", "properties": {"o": {"type": "object", "properties": {"k": {"type": ["string", "null"]}},
                                            "additionalProperties": {"type": "boolean"}}}},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"any": True, "num": {"minimum": 3}, "len": {"maxLength": 1}}},
    {"type": "object", "properties": {"t": {"type": ["integer", "boolean"]}}, "x-mcp-header": "T"},
]
NOT_QUICK: list[dict[str, Any]] = [
    {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a"}}},
    {"type": "object", "properties": {"c": {"const": 1}}},
    {"type": "object", "$defs": {"a": {"type": "string"}}, "properties": {"r": {"$ref": "#/$defs/a"}}},
    {"type": "object", "properties": {"n": {"type": "number", "multipleOf": 2}}},
    {"type": "object", "minProperties": 1},
    {"type": "object", "properties": {"f": False}},
]
TOOLS = Registry.discover().tools
KEYS = ["text", "a", "b", "n", "f", "s", "e", "l", "o", "k", "any", "num", "len", "t", "zz"]


def random_value(rng: random.Random, depth: int = 0) -> Any:
    """A value of any JSON type (and a few a decoder never makes: Decimal, a float that is whole)."""
    kind = rng.randrange(11 if depth < 3 else 8)
    if kind == 0:
        return rng.choice([True, False])
    if kind == 1:
        return rng.choice([0, 1, -1, 3, 10, 11, 2**40])
    if kind == 2:
        return rng.choice([0.0, 1.0, 2.5, -1.5, -2.0, 3.0, 1e300])
    if kind == 3:
        return rng.choice(["", "x", "y", "ab", "abcd", "abcde", "é", "😀😀"])
    if kind == 4:
        return None
    if kind == 5:
        return Decimal(rng.choice(["1", "2.5", "11"]))
    if kind in (6, 7):
        return rng.choice(["x", 1, True, None])
    if kind in (8, 9):
        return {rng.choice(KEYS): random_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


@pytest.mark.parametrize("schema", SCHEMAS + [tool.input_schema for tool in TOOLS.values()])
def test_the_quick_validator_agrees_with_the_schema_validator_on_thousands_of_values(schema):
    reference = SchemaValidator(schema)
    quick = QuickValidator(schema)
    rng = random.Random(str(schema))
    accepted_quickly = 0
    # The schema's own names come up most, so that valid values come up too.
    names = [*schema.get("properties", {}), *schema.get("required", [])] * 4 + KEYS
    for _ in range(3000):
        value = {rng.choice(names): random_value(rng) for _ in range(rng.randrange(4))}
        expected = reference.is_valid(value)
        assert quick.is_valid(value) is expected, value
        if quick.quick is not None and quick.quick(value):
            assert expected, value
            accepted_quickly += 1
    # The quick path is taken (it would be pointless otherwise) wherever a schema qualifies.
    assert quick.quick is None or accepted_quickly > 0


def test_the_simple_schemas_get_a_quick_check_and_the_seed_tools_too():
    assert all(quick_check(schema) is not None for schema in SCHEMAS)
    assert quick_check(TOOLS["echo"].input_schema) is not None
    assert quick_check(TOOLS["add"].input_schema) is not None


@pytest.mark.parametrize("schema", NOT_QUICK)
def test_a_schema_with_any_other_keyword_is_left_to_jsonschema(schema):
    assert quick_check(schema) is None
    assert QuickValidator(schema).quick is None
    for value in ({}, {"s": "b", "c": 2, "r": 3, "n": 3, "f": 1}, {"s": "a", "c": 1, "r": "x", "n": 4}):
        assert QuickValidator(schema).is_valid(value) is SchemaValidator(schema).is_valid(value)


def test_errors_still_come_from_jsonschema():
    quick = QuickValidator(SCHEMAS[0])
    assert [error.message for error in quick.iter_errors({"text": 5})] == ["5 is not of type 'string'"]


@pytest.mark.parametrize("value", [1.0, 1e300, -2.0, True, Decimal("1"), "1"])
def test_an_integer_is_an_int_only(value):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert Draft202012Validator(schema).is_valid({"n": 1.0}), "jsonschema alone takes a whole float"
    assert not QuickValidator(schema).is_valid({"n": value})
    assert QuickValidator(schema).is_valid({"n": 2**70})


def test_a_whole_float_is_still_a_number():
    assert QuickValidator({"type": "object", "properties": {"x": {"type": "number"}}}).is_valid({"x": 1.0})

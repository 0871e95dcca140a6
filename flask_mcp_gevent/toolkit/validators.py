"""Arguments checked against the simple JSON Schemas most tools declare, without jsonschema's machinery.

jsonschema spends about twenty microseconds on `{"type": "object", "properties": {"text": {"type": "string"}}}`
and a valid argument; the same answer takes one here. A schema gets a quick check only when every keyword in it
is one of KEYWORDS, ANNOTATIONS or an "x-" extension, and the check can only say "valid": anything it is not sure
of (a value it does not know) is handed to jsonschema, which also writes every error message. So a quick check never
accepts what SchemaValidator refuses; at worst it adds a microsecond.

SchemaValidator is Draft 2020-12 with two changes: an "integer" is a JSON integer only (jsonschema's own type checker
takes any whole number, 1.0 or 1e300, which a tool's `int` parameter would then receive as a float), and a "number"
is finite (a tool's `-> float` returning nan or infinity, which JSON cannot carry, breaks its outputSchema).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator, validators

__all__ = ["QuickValidator", "SchemaValidator", "quick_check"]

Check = Callable[[Any], bool]


def is_integer(checker: Any, instance: Any) -> bool:
    """An integer is an int: not a whole float (1.0, 1e300), and never a bool."""
    return type(instance) is int


def is_number(checker: Any, instance: Any) -> bool:
    """A number is one JSON can carry: an int or a finite float, never a bool, nan or infinity."""
    return (isinstance(instance, numbers.Number) and not isinstance(instance, bool)
            and (not isinstance(instance, float) or math.isfinite(instance)))


# What every tool's schemas (input and output, inferred or explicit) are checked with.
JSON_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": is_integer, "number": is_number})
SchemaValidator: Any = validators.extend(Draft202012Validator, type_checker=JSON_TYPES)

# Keywords that do not constrain an instance (and any "x-" keyword: jsonschema ignores what it does not know).
ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                         "writeOnly"})
KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items", "enum", "minLength",
                      "maxLength", "minimum", "maximum"})
# Exact for the Python types JSON decodes to; a subclass or a Decimal goes to jsonschema instead.
TYPES: dict[str, Check] = {
    "string": lambda value: type(value) is str,
    "boolean": lambda value: type(value) is bool,
    "null": lambda value: value is None,
    "object": lambda value: type(value) is dict,
    "array": lambda value: type(value) is list,
    "number": lambda value: type(value) is int or (type(value) is float and math.isfinite(value)),
    "integer": lambda value: type(value) is int,
}


def quick_check(schema: Any) -> Check | None:
    """A function that returns True only for values the schema accepts; None if the schema is not simple enough."""
    if schema is True:
        return lambda value: True
    if not isinstance(schema, dict):
        return None
    constraining = set(schema) - ANNOTATIONS - {key for key in schema if key.startswith("x-")}
    if not constraining <= KEYWORDS:
        return None
    checks: list[Check] = []
    for keyword in sorted(constraining):
        check = KEYWORD_CHECKS[keyword](schema[keyword], schema)
        if check is None:
            return None
        checks.append(check)
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(check(value) for check in checks)


# Each keyword's check is True when jsonschema would find that keyword satisfied. A keyword applies to the
# instances jsonschema's type checker gives its type (isinstance, as there); others satisfy it.
def type_check(names: Any, schema: dict[str, Any]) -> Check | None:
    """The type keyword: one name or a list of names."""
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not names or not all(name in TYPES for name in names):
        return None
    tests = [TYPES[name] for name in names]
    return tests[0] if len(tests) == 1 else lambda value: any(test(value) for test in tests)


def properties_check(properties: Any, schema: dict[str, Any]) -> Check | None:
    """The properties keyword: each property present is valid by its own schema (objects only)."""
    if not isinstance(properties, dict):
        return None
    checks: dict[str, Check] = {}
    for name, subschema in properties.items():
        check = quick_check(subschema)
        if check is None:
            return None
        checks[name] = check
    return lambda value: not isinstance(value, dict) or all(checks[name](value[name]) for name in checks
                                                            if name in value)


def required_check(names: Any, schema: dict[str, Any]) -> Check | None:
    """The required keyword (objects only)."""
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return None
    return lambda value: not isinstance(value, dict) or all(name in value for name in names)


def additional_check(additional: Any, schema: dict[str, Any]) -> Check | None:
    """The additionalProperties keyword, against the names properties lists (patternProperties is not simple)."""
    known = frozenset(schema.get("properties", {}))
    if additional is False:
        return lambda value: not isinstance(value, dict) or known.issuperset(value)
    extra = quick_check(additional)
    if extra is None:
        return None
    return lambda value: not isinstance(value, dict) or all(extra(item) for name, item in value.items()
                                                            if name not in known)


def items_check(items: Any, schema: dict[str, Any]) -> Check | None:
    """The items keyword with one schema for every item (arrays only)."""
    check = quick_check(items)
    if check is None:
        return None
    return lambda value: not isinstance(value, list) or all(check(item) for item in value)


def enum_check(members: Any, schema: dict[str, Any]) -> Check | None:
    """The enum keyword, quick for str values only (Python's == takes True for 1, JSON Schema does not)."""
    if not isinstance(members, list):
        return None
    strings = frozenset(member for member in members if isinstance(member, str))
    return lambda value: type(value) is str and value in strings


def length_check(keyword: str) -> Callable[[Any, dict[str, Any]], Check | None]:
    """minLength or maxLength: a string's length in code points, as Python counts them (strings only)."""

    def build(bound: Any, schema: dict[str, Any]) -> Check | None:
        if type(bound) is not int or bound < 0:
            return None
        if keyword == "minLength":
            return lambda value: not isinstance(value, str) or len(value) >= bound
        return lambda value: not isinstance(value, str) or len(value) <= bound

    return build


def bound_check(keyword: str) -> Callable[[Any, dict[str, Any]], Check | None]:
    """minimum or maximum, quick for int and float values (other numbers go to jsonschema; bool is no number)."""

    def build(bound: Any, schema: dict[str, Any]) -> Check | None:
        if type(bound) not in (int, float):
            return None
        within = (lambda value: value >= bound) if keyword == "minimum" else (lambda value: value <= bound)

        def check(value: Any) -> bool:
            if type(value) is int or type(value) is float:
                return within(value)
            return isinstance(value, bool) or not isinstance(value, numbers.Number)

        return check

    return build


KEYWORD_CHECKS: dict[str, Callable[[Any, dict[str, Any]], Check | None]] = {
    "type": type_check,
    "properties": properties_check,
    "required": required_check,
    "additionalProperties": additional_check,
    "items": items_check,
    "enum": enum_check,
    "minLength": length_check("minLength"),
    "maxLength": length_check("maxLength"),
    "minimum": bound_check("minimum"),
    "maximum": bound_check("maximum"),
}


class QuickValidator:
    """A SchemaValidator whose is_valid asks the quick check first (errors always come from jsonschema)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.validator = SchemaValidator(schema)
        self.schema = schema
        self.quick = quick_check(schema)

    def is_valid(self, instance: Any) -> bool:
        """Whether the instance is valid; jsonschema decides whatever the quick check cannot accept."""
        if self.quick is not None and self.quick(instance):
            return True
        return self.validator.is_valid(instance)

    def iter_errors(self, instance: Any) -> Any:
        """jsonschema's errors for the instance."""
        return self.validator.iter_errors(instance)

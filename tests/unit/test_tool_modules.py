"""The tool files in mcp_tools are the template people copy, so each follows the template's rules."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from mcp_tools import Registry

TOOLS = Registry.discover().tools
TOOLS_FOLDER = Path(__file__).resolve().parents[2] / "mcp_tools"


def module_names() -> list[str]:
    """Every module file in mcp_tools/ but its __init__, by name."""
    return sorted(path.stem for path in TOOLS_FOLDER.glob("*.py") if path.name != "__init__.py")


def test_mcp_tools_holds_module_files_only_and_none_starting_with_an_underscore():
    """What a template user opens first is the tools: the machinery lives in flask_mcp_gevent/toolkit/."""
    entries = [path.name for path in TOOLS_FOLDER.iterdir() if path.name != "__pycache__"]
    assert sorted(name for name in entries if not name.endswith(".py")) == []
    assert sorted(name for name in entries if name.startswith("_") and name != "__init__.py") == []


@pytest.mark.parametrize("module", module_names())
def test_each_module_in_mcp_tools_registers_a_tool_resource_or_prompt(module):
    assert Registry().add_module(importlib.import_module(f"mcp_tools.{module}")) >= 1


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_each_tool_declares_a_strict_documented_input_schema(name):
    spec = TOOLS[name]
    schema = spec.input_schema
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert schema.get("additionalProperties") is False, "unknown arguments must be rejected"
    for prop, definition in schema.get("properties", {}).items():
        assert definition.get("description"), f"property {prop!r} needs a description"
    assert set(schema.get("required", [])) <= set(schema.get("properties", {}))


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_each_tool_has_a_description_and_a_module_docstring(name):
    spec = TOOLS[name]
    assert spec.description
    module = sys.modules[spec.fn.__module__]
    assert (module.__doc__ or "").strip()


@pytest.mark.parametrize(
    "arguments, valid",
    [({"a": 1, "b": 2}, True), ({"a": -5, "b": 0}, True), ({"a": 1}, False), ({"a": 1, "b": "2"}, False),
     ({"a": 1, "b": 2, "c": 3}, False), ({"a": True, "b": 2}, False)],
)
def test_add_schema_accepts_exactly_two_integers(arguments, valid):
    assert TOOLS["add"].input_validator.is_valid(arguments) is valid


def test_add_output_schema_describes_its_structured_result():
    assert TOOLS["add"].output_validator.is_valid({"result": 5})
    assert not TOOLS["add"].output_validator.is_valid({"result": "5"})


@pytest.mark.parametrize("arguments, valid", [({"text": ""}, True), ({"text": 1}, False), ({}, False)])
def test_echo_schema_needs_a_text_string(arguments, valid):
    assert TOOLS["echo"].input_validator.is_valid(arguments) is valid


def test_get_time_takes_no_arguments():
    assert TOOLS["get_time"].input_validator.is_valid({})
    assert not TOOLS["get_time"].input_validator.is_valid({"tz": "UTC"})

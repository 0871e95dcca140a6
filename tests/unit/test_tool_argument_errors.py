"""protocol.tools.schema_errors: argument violations reported as short path/message pairs."""

from __future__ import annotations

from flask_mcp_gevent.protocol.tools import MAX_REPORTED_ERRORS, schema_errors
from mcp_tools import Registry, tool

SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "string", "maxLength": 3}},
    "required": ["a"],
    "additionalProperties": False,
}


def make_tool(schema=SCHEMA):
    """Register a tool with schema and return its spec."""

    @tool("sample", input_schema=schema)
    def sample(**_):
        """Accept anything the schema allows."""

    registry = Registry()
    registry.add_function(sample)
    return registry.tools["sample"]


def test_valid_arguments_have_no_errors():
    assert schema_errors(make_tool(), {"a": 1, "b": "abc"}) == []


def test_each_violation_names_its_path():
    errors = schema_errors(make_tool(), {"a": "1", "b": "toolong"})
    assert [e["path"] for e in errors] == ["/a", "/b"]
    assert "integer" in errors[0]["message"]


def test_missing_and_extra_properties_are_reported_at_the_root():
    errors = schema_errors(make_tool(), {"c": 1})
    assert {e["path"] for e in errors} == {"/"}
    assert len(errors) == 2


def test_the_report_is_bounded():
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    errors = schema_errors(make_tool(schema), {f"k{n}": "x" * 1000 for n in range(50)})
    assert len(errors) == MAX_REPORTED_ERRORS
    assert all(len(e["message"]) <= 300 for e in errors)

"""The default instructions: one line naming the tools served, built from the registry, bounded in length."""

from __future__ import annotations

from types import SimpleNamespace

from flask_mcp_gevent.protocol.instructions import MAX_NAMED_TOOLS, MAX_SUMMARY_CHARS, describe_tools
from mcp_tools import Registry, tool

OBJECT = {"type": "object", "properties": {}, "additionalProperties": False}


@tool(input_schema=OBJECT)
def multiply() -> int:
    """Multiply two numbers.

    A second line the instructions leave out.
    """
    return 0


def test_every_shipped_tool_is_named_with_its_summary():
    line = describe_tools(Registry.discover().tools.values())
    assert line.startswith("Tools: add (Add two integers and return their sum), ")
    for name in ("add", "ask_choice", "count_down", "echo", "get_time"):
        assert f"{name} (" in line


def test_a_tool_added_to_the_registry_is_named_with_its_first_docstring_line():
    registry = Registry.discover()
    registry.add_function(multiply)
    line = describe_tools(registry.tools.values())
    assert "multiply (Multiply two numbers)" in line
    assert "second line" not in line


def test_no_tools_no_instructions():
    assert describe_tools([]) == ""


def test_a_big_registry_names_its_first_tools_by_name_and_counts_the_rest():
    tools = [SimpleNamespace(name=f"t{number:03d}", description="x" * 500) for number in range(MAX_NAMED_TOOLS + 5)]
    line = describe_tools(reversed(tools))
    assert "t000 (" in line and f"t{MAX_NAMED_TOOLS - 1:03d} (" in line and f"t{MAX_NAMED_TOOLS:03d}" not in line
    assert line.endswith(" And 5 more: see tools/list.")
    assert f"({'x' * (MAX_SUMMARY_CHARS - 3)}...)" in line

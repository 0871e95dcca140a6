"""Tools the stateless-client tests drive: a tool that asks its client twice through the legacy ctx API.

Loaded with MCP_PLUGINS=tests.e2e.plugins.two_question_tools. On a legacy session each ctx.elicit is an
elicitation/create request; on the 2026-07-28 wire each is one input_required round.
"""

from __future__ import annotations

from mcp_tools import tool

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOUR_SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def ask_twice(ctx) -> str:
    """Ask the user's name, then their favourite colour, and greet them with both."""
    first = ctx.elicit("What is your name?", NAME_SCHEMA)
    if first.get("action") != "accept":
        return f"no name: {first.get('action')}"
    second = ctx.elicit(f"{first['content']['name']}, what is your favourite colour?", COLOUR_SCHEMA)
    if second.get("action") != "accept":
        return f"no colour: {second.get('action')}"
    return f"Hello {first['content']['name']}, who likes {second['content']['colour']}."

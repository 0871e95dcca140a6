"""Resources to subscribe to by the hundred, a tool that reports the stored session, one that touches resources.

Loaded with MCP_PLUGINS=tests.e2e.plugins.session_tools by the session-consistency tests.
"""

from __future__ import annotations

from mcp_tools import resource_template, tool

NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}
ITEM_URI = "test://item/{n}"


@resource_template(ITEM_URI, name="item", mime_type="text/plain")
def read_item(n: str) -> str:
    """A numbered item: one resource per number, so a test can subscribe to many distinct URIs."""
    return f"item {n}"


@tool(input_schema=NO_ARGUMENTS)
def stored_session(ctx) -> dict:
    """Report the session's subscriptions and log level as the store stored them when this call began."""
    return {"subscriptions": sorted(ctx.session.subscriptions), "logLevel": ctx.session.log_level}


@tool(input_schema={
    "type": "object",
    "properties": {
        "count": {"type": "integer", "minimum": 0, "maximum": 1000,
                  "description": "How many items to touch: test://item/0 .. test://item/<count - 1>."},
    },
    "required": ["count"],
    "additionalProperties": False,
})
def touch_items(count: int, ctx) -> int:
    """Announce that items 0 .. count - 1 changed, to every session subscribed to them."""
    for n in range(count):
        ctx.resource_updated(ITEM_URI.format(n=n))
    return count

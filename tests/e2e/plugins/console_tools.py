"""Tools the browser console tests drive: an elicitation, every kind of content block, a nested schema.

Loaded with MCP_PLUGINS=tests.e2e.plugins.console_tools.
"""

from __future__ import annotations

import base64

from mcp_tools import ToolResult, audio, embedded_resource, image, text, tool

# A 1x1 transparent PNG, so the image block is a real image the browser decodes.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
NAME_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Who is asking."},
        "age": {"type": "integer", "minimum": 0, "description": "How old they are."},
    },
    "required": ["name"],
}


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def greet_user(ctx) -> str:
    """Ask the user for a name (elicitation) and greet them, or say what they answered instead."""
    answer = ctx.elicit("What is your name?", NAME_SCHEMA)
    if answer.get("action") != "accept":
        return f"No greeting: the user chose {answer.get('action')}."
    content = answer.get("content") or {}
    return f"Hello, {content.get('name')} ({content.get('age', 'age unknown')})!"


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def show_every_block() -> ToolResult:
    """Return a text, an image, an audio clip and an embedded resource, with structured content."""
    return ToolResult(
        content=[
            text("four blocks follow"),
            image(PIXEL_PNG, "image/png"),
            audio(b"RIFF\x24\x00\x00\x00WAVE", "audio/wav"),
            embedded_resource("test://embedded", "embedded text", mime_type="text/plain"),
        ],
        structured={"blocks": 4},
    )


ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "customer": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Who orders."},
                "vip": {"type": "boolean", "description": "Served first."},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "items": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "What they order.",
        },
        "size": {"type": "string", "enum": ["small", "large"], "description": "Portion size."},
        "price": {"type": "number", "minimum": 0, "description": "Price per item."},
    },
    "required": ["customer", "items"],
    "additionalProperties": False,
}


@tool(input_schema=ORDER_SCHEMA)
def place_order(customer: dict, items: list[str], size: str = "small", price: float = 1.0) -> dict:
    """Echo an order back, to show nested objects, arrays, enums and booleans in the form."""
    return {"customer": customer, "items": items, "size": size, "total": price * len(items)}

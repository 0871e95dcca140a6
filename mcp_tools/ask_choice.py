"""Ask the user to pick one of a few options (elicitation) and return the pick: the example of a tool that asks.

`ctx.elicit` works on both eras: in a 2025-era session it sends the client an elicitation/create request and
waits; on MCP 2026-07-28 the call ends with an input_required round, and the client's retry runs this function
again from the top with the answer. So nothing here has an effect: it only returns what the user chose.
"""

from mcp_tools import Context, ToolError, tool

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "minLength": 1, "maxLength": 500, "description": "What to ask the user."},
        "options": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 100},
            "minItems": 1,
            "maxItems": 20,
            "uniqueItems": True,
            "description": "The answers the user picks one from.",
        },
    },
    "required": ["question", "options"],
    "additionalProperties": False,
}


@tool(input_schema=INPUT_SCHEMA, annotations={"readOnlyHint": True})
def ask_choice(question: str, options: list[str], ctx: Context) -> str:
    """Ask the user to pick one of the options, and return the option they picked."""
    answer = ctx.elicit(question, {
        "type": "object",
        "properties": {"choice": {"type": "string", "enum": options, "description": "Pick one."}},
        "required": ["choice"],
    })
    action, content = answer.get("action"), answer.get("content")
    if action in ("decline", "cancel"):
        return f"No choice: the user chose to {action}."
    choice = content.get("choice") if isinstance(content, dict) else None
    # Nothing checks the client's answer against the schema asked with: check what this code relies on.
    if action != "accept" or choice not in options:
        raise ToolError("The client's answer is not one of the options.")
    return choice

"""The fixtures conformance 0.2.0-alpha.12 needs for MCP 2026-07-28, beside fixtures.py's (load both as plugins).

server-stateless calls test_missing_capability, test_streaming_elicitation and test_logging_tool, and the two
trigger tools while subscriptions/listen streams are open; http-custom-header-server-validation needs a tool
with an x-mcp-header on a string property.
"""

from __future__ import annotations

from mcp_tools import prompt, tool

NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}
TOGGLED_TOOL = "test_toggled_tool"
TOGGLED_PROMPT = "test_toggled_prompt"


@tool(input_schema=NO_ARGUMENTS)
def test_missing_capability(ctx) -> str:
    """Ask the client's model (sampling): a request that did not declare sampling gets -32021."""
    answer = ctx.sample([{"role": "user", "content": {"type": "text", "text": "Say hello"}}], max_tokens=20)
    content = answer.get("content", {})
    return f"LLM response: {content.get('text', '') if isinstance(content, dict) else ''}"


@tool(input_schema=NO_ARGUMENTS)
def test_streaming_elicitation(ctx) -> str:
    """Ask the user for a name: on the 2026-07-28 wire that is an input_required result, never a request."""
    schema = {"type": "object", "properties": {"name": {"type": "string", "description": "Your name"}},
              "required": ["name"]}
    answer = ctx.elicit("What is your name?", schema)
    content = answer.get("content") if isinstance(answer.get("content"), dict) else {}
    return f"Hello, {content.get('name', 'stranger')}!"


@tool(input_schema=NO_ARGUMENTS)
def test_logging_tool(ctx) -> str:
    """Log at three levels: nothing goes out unless the request's _meta carries a logLevel."""
    for level in ("debug", "info", "warning"):
        ctx.log(level, f"test_logging_tool says {level}", logger="conformance")
    return "Logged three messages."


def toggled_tool():
    """A tool that test_trigger_tool_change adds and removes."""

    @tool(name=TOGGLED_TOOL, input_schema=NO_ARGUMENTS)
    def say_toggled() -> str:
        """Exist only every other time test_trigger_tool_change runs."""
        return "toggled on"

    return say_toggled


def toggled_prompt():
    """A prompt that test_trigger_prompt_change adds and removes."""

    @prompt(name=TOGGLED_PROMPT)
    def render_toggled() -> str:
        """Exist only every other time test_trigger_prompt_change runs."""
        return "toggled on"

    return render_toggled


@tool(input_schema=NO_ARGUMENTS)
def test_trigger_tool_change(ctx) -> str:
    """Add a tool, or remove it if it is there: either way tools/list_changed goes out."""
    if ctx.registry.remove("tool", TOGGLED_TOOL):
        return f"removed {TOGGLED_TOOL}"
    ctx.registry.add_from(toggled_tool)
    return f"added {TOGGLED_TOOL}"


@tool(input_schema=NO_ARGUMENTS)
def test_trigger_prompt_change(ctx) -> str:
    """Add a prompt, or remove it if it is there: either way prompts/list_changed goes out."""
    if ctx.registry.remove("prompt", TOGGLED_PROMPT):
        return f"removed {TOGGLED_PROMPT}"
    ctx.registry.add_from(toggled_prompt)
    return f"added {TOGGLED_PROMPT}"


@tool(input_schema={
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region", "description": "Mirrored in Mcp-Param-Region."},
        "priority": {"type": "integer", "x-mcp-header": "Priority", "description": "Mirrored in Mcp-Param-Priority."},
        "note": {"type": "string", "description": "Not mirrored."},
    },
    "required": ["region"],
    "additionalProperties": False,
})
def test_custom_headers(region: str, priority: int | None = None, note: str = "") -> str:
    """Echo the arguments whose values the client also sent as Mcp-Param-* headers."""
    return f"region={region} priority={priority} note={note}"

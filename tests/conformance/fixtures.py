"""The fixtures the official MCP conformance suite expects, loaded as a plugin.

Load with MCP_PLUGINS=tests.conformance.fixtures. They are test fixtures, not
template tools, which is why they live here and not in mcp_tools/; loading them
this way also proves the plugin mechanism.
"""

from __future__ import annotations

import base64

import gevent

from mcp_tools import (
    PromptArgument,
    ToolError,
    ToolResult,
    embedded_resource,
    image,
    prompt,
    resource,
    resource_template,
    text,
    tool,
)

# A 1x1 red PNG and a tiny WAV, the same sizes the suite's reference server uses.
RED_PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
TINY_WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}
STEP_S = 0.05


def one_string(name: str, description: str) -> dict:
    """An input schema with one required string argument."""
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
        "additionalProperties": False,
    }


@tool(input_schema=NO_ARGUMENTS)
def test_simple_text() -> ToolResult:
    """Return one text block."""
    return ToolResult([text("This is a simple text response for testing.")])


@tool(input_schema=NO_ARGUMENTS)
def test_image_content() -> ToolResult:
    """Return one image block (a 1x1 red PNG)."""
    return ToolResult([image(RED_PIXEL_PNG, "image/png")])


@tool(input_schema=NO_ARGUMENTS)
def test_audio_content() -> ToolResult:
    """Return one audio block (a tiny WAV)."""
    return ToolResult([{"type": "audio", "data": base64.b64encode(TINY_WAV).decode(), "mimeType": "audio/wav"}])


@tool(input_schema=NO_ARGUMENTS)
def test_embedded_resource() -> ToolResult:
    """Return one embedded text resource."""
    return ToolResult([
        embedded_resource("test://embedded-resource", "This is an embedded resource content.", mime_type="text/plain")
    ])


@tool(input_schema=NO_ARGUMENTS)
def test_multiple_content_types() -> ToolResult:
    """Return text, image and embedded resource blocks together."""
    return ToolResult([
        text("Multiple content types test:"),
        image(RED_PIXEL_PNG, "image/png"),
        embedded_resource("test://mixed-content-resource", '{"test":"data","value":123}', mime_type="application/json"),
    ])


@tool(input_schema=NO_ARGUMENTS)
def test_tool_with_logging(ctx) -> str:
    """Send three info log notifications while working."""
    ctx.log("info", "Tool execution started", logger="conformance")
    gevent.sleep(STEP_S)
    ctx.log("info", "Tool processing data", logger="conformance")
    gevent.sleep(STEP_S)
    ctx.log("info", "Tool execution completed", logger="conformance")
    return "Logging test completed."


@tool(input_schema=NO_ARGUMENTS)
def test_error_handling() -> None:
    """Fail on purpose, as a tool-level error result."""
    raise ToolError("This tool intentionally returns an error for testing")


@tool(input_schema=NO_ARGUMENTS)
def test_tool_with_progress(ctx) -> str:
    """Report progress 0, 50 and 100 of 100."""
    for step, value in enumerate((0, 50, 100)):
        if step:
            gevent.sleep(STEP_S)
        ctx.progress(value, total=100)
    return "Progress test completed."


@tool(input_schema=one_string("prompt", "The prompt to send to the client's model."))
def test_sampling(prompt: str, ctx) -> str:
    """Ask the client's model to answer the prompt."""
    answer = ctx.sample([{"role": "user", "content": {"type": "text", "text": prompt}}], max_tokens=100)
    content = answer.get("content", {})
    return f"LLM response: {content.get('text', '') if isinstance(content, dict) else ''}"


@tool(input_schema=one_string("message", "What to ask the user."))
def test_elicitation(message: str, ctx) -> str:
    """Ask the user for a username and an email address."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    answer = ctx.elicit(message, schema)
    return f"User response: action={answer.get('action')}, content={answer.get('content')}"


@tool(input_schema=NO_ARGUMENTS)
def test_elicitation_sep1034_defaults(ctx) -> str:
    """Ask for input whose fields carry default values (SEP-1034)."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"],
                       "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
    }
    answer = ctx.elicit("Please review and update the form fields with defaults", schema)
    return f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"


@tool(input_schema=NO_ARGUMENTS)
def test_elicitation_sep1330_enums(ctx) -> str:
    """Ask for input with the five enum shapes of SEP-1330."""
    options = ["option1", "option2", "option3"]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": options},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"},
            ]}},
        },
    }
    answer = ctx.elicit("Please choose options", schema)
    return f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"


@tool(
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    },
    description="Tool with JSON Schema 2020-12 features",
)
def json_schema_2020_12_tool(name: str = "", address: dict | None = None, contactMethod: str = "",
                             phone: str = "", email: str = "") -> str:
    """Accept a schema that uses $defs, $anchor, $ref, allOf/anyOf and if/then/else (listed untouched)."""
    return f"Received name={name!r}, address={address!r}, contactMethod={contactMethod!r}"


@resource("test://static-text", name="static_text", mime_type="text/plain")
def static_text() -> str:
    """A fixed text resource."""
    return "This is the content of the static text resource."


@resource("test://static-binary", name="static_binary", mime_type="image/png")
def static_binary() -> bytes:
    """A fixed binary resource (a PNG)."""
    return RED_PIXEL_PNG


@resource("test://watched-resource", name="watched_resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients subscribe to."""
    return "Watched resource content"


@resource_template("test://template/{id}/data", name="template_data", mime_type="application/json",
                   complete=lambda name, value: [v for v in ("123", "456") if v.startswith(value)])
def template_data(id: str) -> str:
    """Data for an id, substituted from the URI."""
    return f'{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}'


@prompt()
def test_simple_prompt() -> str:
    """A prompt without arguments."""
    return "This is a simple prompt for testing."


@prompt(
    arguments=[
        PromptArgument("arg1", "First test argument", required=True),
        PromptArgument("arg2", "Second test argument", required=True),
    ],
    complete=lambda name, value: [v for v in ("paris", "park", "party", "test") if v.startswith(value)],
)
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt that repeats its two arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@prompt(arguments=[PromptArgument("resourceUri", "URI of the resource to embed", required=True)])
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict]:
    """A prompt that embeds a resource."""
    return [
        {"role": "user", "content": embedded_resource(resourceUri, "Embedded resource content for testing.",
                                                      mime_type="text/plain")},
        {"role": "user", "content": text("Please process the embedded resource above.")},
    ]


@prompt()
def test_prompt_with_image() -> list[dict]:
    """A prompt that carries an image."""
    return [
        {"role": "user", "content": image(RED_PIXEL_PNG, "image/png")},
        {"role": "user", "content": text("Please analyze the image above.")},
    ]


@tool(input_schema=NO_ARGUMENTS)
def test_reconnection(ctx) -> str:
    """Close this call's event stream at once, then answer; the client resumes with Last-Event-ID (SEP-1699)."""
    ctx.close_stream()
    gevent.sleep(0.1)
    return "Reconnection test completed successfully. If you received this, the client properly reconnected."

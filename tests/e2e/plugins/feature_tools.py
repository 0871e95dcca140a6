"""Tools the SDK feature tests drive: roots, cancellation, run-time registry changes, resource updates, logging.

Loaded with MCP_PLUGINS=tests.e2e.plugins.feature_tools next to the conformance fixtures.
The e2e servers run one worker, so the module-level CALLS table is seen by every request.
"""

from __future__ import annotations

import gevent

from mcp_tools import PromptArgument, prompt, resource, tool
from tests.support.store_seam import server_store, streaming_session_ids

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
# What each wait_until_cancelled call is doing, by the key the test chose: running, cancelled or finished.
CALLS: dict[str, dict] = {}
MAX_TRACKED_CALLS = 100
# What change_registry adds and removes; nothing registers these at start.
RUNTIME_RESOURCE = "test://runtime-resource"
RUNTIME_PROMPT = "runtime_prompt"


def key_schema(**extra: dict) -> dict:
    """An input schema with a required string `key` plus the given properties."""
    return {
        "type": "object",
        "properties": {"key": {"type": "string", "description": "A name the test chose for this call."}, **extra},
        "required": ["key"],
        "additionalProperties": False,
    }


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def list_client_roots(ctx) -> dict:
    """Ask the client for its roots and return them as they came."""
    return {"roots": ctx.list_roots()}


@tool(input_schema=key_schema(seconds={"type": "number", "minimum": 0, "maximum": 60,
                                       "description": "How long to wait before finishing on its own."}))
def wait_until_cancelled(key: str, ctx, seconds: float = 60) -> str:
    """Wait, noting under key whether the call finished or was killed by notifications/cancelled."""
    if len(CALLS) >= MAX_TRACKED_CALLS:
        CALLS.clear()
    CALLS[key] = {"state": "running", "requestId": ctx.request_id, "session": ctx.session_id[:8]}
    try:
        gevent.sleep(seconds)
    except gevent.GreenletExit:
        CALLS[key]["state"] = "cancelled"
        raise
    CALLS[key]["state"] = "finished"
    return "finished"


@tool(input_schema=key_schema())
def call_state(key: str) -> dict:
    """Report what the wait_until_cancelled call under key is doing ({} before it starts)."""
    return CALLS.get(key, {})


def runtime_resource():
    """A fresh resource function for test://runtime-resource (built here so discovery does not register it)."""

    @resource(RUNTIME_RESOURCE, name="runtime_resource", mime_type="text/plain")
    def read_runtime_resource() -> str:
        """A resource that exists only between change_registry add and remove."""
        return "added at run time"

    return read_runtime_resource


def runtime_prompt():
    """A fresh prompt function named runtime_prompt."""

    @prompt(name=RUNTIME_PROMPT, arguments=[PromptArgument("topic", "Anything.")])
    def render_runtime_prompt(topic: str = "") -> str:
        """A prompt that exists only between change_registry add and remove."""
        return f"runtime prompt {topic}"

    return render_runtime_prompt


def runtime_tool(name: str):
    """A fresh tool function registered under name."""

    @tool(name=name, input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def say_here() -> str:
        """A tool that exists only between change_registry add and remove."""
        return f"{name} is here"

    return say_here


@tool(input_schema={
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["tool", "resource", "prompt"], "description": "What to change."},
        "action": {"type": "string", "enum": ["add", "remove"], "description": "Add it or remove it."},
        "name": {"type": "string", "pattern": "^rt-[a-z0-9-]{1,40}$",
                 "description": "The tool's name (kind 'tool' only)."},
    },
    "required": ["kind", "action"],
    "additionalProperties": False,
})
def change_registry(kind: str, action: str, ctx, name: str = "rt-tool") -> str:
    """Add or remove a tool, a resource or a prompt while the server runs; clients hear list_changed."""
    key = {"tool": name, "resource": RUNTIME_RESOURCE, "prompt": RUNTIME_PROMPT}[kind]
    if action == "remove":
        return f"removed {kind} {key}: {ctx.registry.remove(kind, key)}"
    # By factory and JSON arguments, so that on a fleet every worker builds the same function.
    if kind == "tool":
        ctx.registry.add_from(runtime_tool, name=name)
    else:
        ctx.registry.add_from({"resource": runtime_resource, "prompt": runtime_prompt}[kind])
    return f"added {kind} {key}"


@tool(input_schema={
    "type": "object",
    "properties": {"uri": {"type": "string", "description": "The resource that changed."}},
    "required": ["uri"],
    "additionalProperties": False,
})
def touch_resource(uri: str, ctx) -> str:
    """Announce that the resource at uri changed, to every subscribed session."""
    ctx.resource_updated(uri)
    return f"touched {uri}"


@tool(input_schema={
    "type": "object",
    "properties": {
        "entries": {
            "type": "array",
            "maxItems": 20,
            "description": "Log lines to send, in order.",
            "items": {
                "type": "object",
                "properties": {
                    "level": {"type": "string", "enum": LEVELS, "description": "RFC 5424 level."},
                    "data": {"type": "string", "description": "The message."},
                },
                "required": ["level", "data"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["entries"],
    "additionalProperties": False,
})
def log_entries(entries: list, ctx) -> int:
    """Send each entry as notifications/message (logger 'feature'); return how many were given."""
    for entry in entries:
        ctx.log(entry["level"], entry["data"], logger="feature")
    return len(entries)


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def stream_open(ctx) -> bool:
    """Whether this session's stream is attached here, so broadcasts (list_changed, updated) reach it."""
    return ctx.session_id in streaming_session_ids(server_store())

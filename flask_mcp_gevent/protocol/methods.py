"""The MCP methods both eras share, and the session era's table: jsonrpcserver handlers, the context first.

Handlers never import Flask: every transport reaches them through `Server`, and they reach the server
only through their `RequestContext`. Each takes `**_` so that fields added by newer protocol revisions
never break dispatch. What `initialize` announces (capabilities, server info) is defined here too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonrpcserver import Success

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.errors import INVALID_PARAMS, INVALID_REQUEST, RpcError
from flask_mcp_gevent.protocol.completion import complete
from flask_mcp_gevent.protocol.instructions import server_instructions
from flask_mcp_gevent.protocol.pagination import paginate
from flask_mcp_gevent.protocol.prompts import describe_prompt, render_prompt
from flask_mcp_gevent.protocol.request_context import LOG_LEVELS, STATELESS_ERA, RequestContext, guarded
from flask_mcp_gevent.protocol.resources import describe_resource, describe_template, find_readable, read_resource
from flask_mcp_gevent.protocol.tools import tools_call
from flask_mcp_gevent.session import SessionChange, at_least, negotiate
from flask_mcp_gevent.stateless.input_rounds import run_rounds
from flask_mcp_gevent.tasks.shapes import TASKS_EXTENSION

__all__ = ["SERVER_VERSION", "SESSION_METHODS", "list_page", "server_capabilities", "server_info",
           "tool_definition"]

SERVER_VERSION = "1.0.0"
MAX_SUBSCRIPTIONS = 1000
# The revision whose server/discover announces extensions (the tasks extension).
STATELESS_SINCE = "2026-07-28"


def server_capabilities(version: str | None = None) -> dict[str, Any]:
    """Exactly the server capabilities that are implemented (completions exist from 2025-03-26)."""
    implemented: dict[str, Any] = {
        "tools": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "prompts": {"listChanged": True},
        "logging": {},
    }
    if at_least(version, "2025-03-26"):
        implemented["completions"] = {}
    if at_least(version, STATELESS_SINCE):
        implemented["extensions"] = {TASKS_EXTENSION: {}}
    return implemented


def server_info(settings: Settings) -> dict[str, Any]:
    """Name and version for initialize."""
    return {"name": settings.server_name, "version": SERVER_VERSION}


def tool_definition(tool: Any, version: str | None) -> dict[str, Any]:
    """Describe a tool for tools/list in the shape the session's version knows."""
    definition: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
    }
    if at_least(version, "2025-03-26") and tool.annotations:
        definition["annotations"] = tool.annotations
    if at_least(version, "2025-06-18"):
        if tool.title:
            definition["title"] = tool.title
        if tool.output_schema is not None:
            definition["outputSchema"] = tool.output_schema
    return definition


@guarded
def initialize(
    ctx: RequestContext,
    protocolVersion: Any,
    capabilities: Any = None,
    clientInfo: Any = None,
    **_: Any,
) -> Any:
    """Negotiate the protocol version and tell the client what this server offers."""
    already = RpcError(INVALID_REQUEST, "This session is already initialized; open a new session to start again")
    if ctx.session.negotiated:
        raise already
    negotiated = SessionChange(assign={
        "protocol_version": negotiate(protocolVersion),
        "client_capabilities": capabilities if isinstance(capabilities, dict) else {},
        "client_info": clientInfo if isinstance(clientInfo, dict) else {},
    }, unless_negotiated=True)
    # Two initializes racing on one session: only one may win.
    if not ctx.change_session(negotiated):
        raise already
    settings = ctx.settings
    result: dict[str, Any] = {
        "protocolVersion": ctx.session.protocol_version,
        "capabilities": server_capabilities(ctx.session.protocol_version),
        "serverInfo": server_info(settings),
    }
    instructions = server_instructions(ctx)
    if instructions:
        result["instructions"] = instructions
    return Success(result)


@guarded
def initialized(ctx: RequestContext, **_: Any) -> Any:
    """Mark the session ready for server-initiated requests."""
    if ctx.session.negotiated and not ctx.session.initialized:
        ctx.change_session(SessionChange(assign={"initialized": True}))
    return Success(None)


@guarded
def ping(ctx: RequestContext, **_: Any) -> Any:
    """Answer a liveness check with an empty result."""
    return Success({})


@guarded
def tools_list(ctx: RequestContext, cursor: Any = None, **_: Any) -> Any:
    """List the tools this session's principal may call, one page at a time."""
    tools = ctx.visible("tool", ctx.registry.tools)
    if ctx.era == STATELESS_ERA:
        tools.sort(key=lambda tool: tool.name)  # 2026-07-28: a deterministic order, whatever registered first
    version = ctx.session.protocol_version
    return list_page(ctx, tools, cursor, "tools", lambda t: tool_definition(t, version))


def in_rounds(ctx: RequestContext, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run a handler's work, through the input rounds on the 2026-07-28 wire (the one that has them)."""
    return run_rounds(ctx, work) if ctx.stateless else work()


def list_page(ctx: RequestContext, items: list[Any], cursor: Any, key: str, describe: Callable[[Any], Any]) -> Any:
    """One page of a list method's result, with nextCursor when there is more."""
    page, next_cursor = paginate(items, cursor, ctx.settings.page_size)
    result: dict[str, Any] = {key: [describe(item) for item in page]}
    if next_cursor:
        result["nextCursor"] = next_cursor
    return Success(result)


@guarded
def resources_list(ctx: RequestContext, cursor: Any = None, **_: Any) -> Any:
    """List the fixed-URI resources this principal may read."""
    items = ctx.visible("resource", ctx.registry.resources)
    return list_page(ctx, items, cursor, "resources", describe_resource)


@guarded
def resources_templates_list(ctx: RequestContext, cursor: Any = None, **_: Any) -> Any:
    """List the resource templates (RFC 6570) this server resolves."""
    items = ctx.visible("resource", ctx.registry.templates)
    return list_page(ctx, items, cursor, "resourceTemplates", describe_template)


@guarded
def resources_read(ctx: RequestContext, uri: Any, **_: Any) -> Any:
    """Read a resource by URI: text, or a base64 blob."""
    return Success(in_rounds(ctx, lambda: read_resource(ctx.registry, ctx, uri)))


@guarded
def resources_subscribe(ctx: RequestContext, uri: Any, **_: Any) -> Any:
    """Send notifications/resources/updated to this session when uri changes."""
    check_subscribable(ctx, uri)
    if not ctx.change_session(SessionChange(subscribe=uri, subscription_limit=MAX_SUBSCRIPTIONS)):
        raise RpcError(INVALID_PARAMS, f"Too many subscriptions: at most {MAX_SUBSCRIPTIONS} per session")
    return Success({})


@guarded
def resources_unsubscribe(ctx: RequestContext, uri: Any, **_: Any) -> Any:
    """Stop update notifications for uri."""
    if not isinstance(uri, str):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'uri' must be a string")
    ctx.change_session(SessionChange(unsubscribe=uri))
    return Success({})


def check_subscribable(ctx: RequestContext, uri: Any) -> None:
    """A subscription must name a resource this principal may read."""
    if not isinstance(uri, str) or not uri:
        raise RpcError(INVALID_PARAMS, "Invalid params: 'uri' must be a non-empty string")
    find_readable(ctx, uri)


@guarded
def prompts_list(ctx: RequestContext, cursor: Any = None, **_: Any) -> Any:
    """List the prompts this principal may use."""
    items = ctx.visible("prompt", ctx.registry.prompts)
    return list_page(ctx, items, cursor, "prompts", describe_prompt)


@guarded
def prompts_get(ctx: RequestContext, name: Any, arguments: Any = None, **_: Any) -> Any:
    """Render a prompt with its arguments."""
    if isinstance(name, str):
        ctx.require("prompt", name)
    prompt = ctx.registry.prompts.get(name) if isinstance(name, str) else None
    if prompt is None:
        raise RpcError(INVALID_PARAMS, f"Unknown prompt: {name!r}; call prompts/list to see the prompts",
                       {"prompt": name})
    return Success(in_rounds(ctx, lambda: render_prompt(ctx, prompt, arguments)))


@guarded
def logging_set_level(ctx: RequestContext, level: Any, **_: Any) -> Any:
    """Set the least severe level of notifications/message this session receives."""
    if level not in LOG_LEVELS:
        raise RpcError(INVALID_PARAMS, f"Invalid params: level must be one of {', '.join(LOG_LEVELS)}",
                       {"level": level})
    ctx.change_session(SessionChange(assign={"log_level": level}))
    return Success({})


@guarded
def completion_complete(ctx: RequestContext, ref: Any, argument: Any, context: Any = None, **_: Any) -> Any:
    """Suggest values for a prompt argument or a resource-template variable."""
    if isinstance(ref, dict) and ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
        ctx.require("prompt", ref["name"])
    if isinstance(ref, dict) and ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
        kind = "resource template" if ref["uri"] in ctx.registry.templates else "resource"
        ctx.require(kind, ref["uri"])
    return Success(complete(ctx, ref, argument, context))


@guarded
def roots_list_changed(ctx: RequestContext, **_: Any) -> Any:
    """Nothing caches the client's roots, so a change needs no action."""
    return Success(None)


# The session era's methods by their JSON-RPC names (the 2026-07-28 table is stateless/methods.py's, built from this
# one); jsonrpcserver dispatches through these tables only.
SESSION_METHODS: dict[str, Callable[..., Any]] = {
    "initialize": initialize,
    "notifications/initialized": initialized,
    "ping": ping,
    "tools/list": tools_list,
    "tools/call": tools_call,
    "resources/list": resources_list,
    "resources/templates/list": resources_templates_list,
    "resources/read": resources_read,
    "resources/subscribe": resources_subscribe,
    "resources/unsubscribe": resources_unsubscribe,
    "prompts/list": prompts_list,
    "prompts/get": prompts_get,
    "logging/setLevel": logging_set_level,
    "completion/complete": completion_complete,
    "notifications/roots/list_changed": roots_list_changed,
}

"""The MCP methods, as jsonrpcserver `@method` handlers; the context is the first argument.

Handlers never import Flask: every transport reaches them through `McpCore`. Each
takes `**_` so that fields added by newer protocol revisions never break dispatch.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from jsonrpcserver import Success, method
from jsonrpcserver.exceptions import JsonRpcError

from mcp_server.context import RequestContext
from mcp_server.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, RpcError, new_correlation_id
from mcp_server.pagination import paginate
from mcp_server.tool_runner import run_tool
from mcp_server.versions import at_least, negotiate

__all__ = ["guarded", "server_capabilities", "tool_definition"]

log = logging.getLogger("mcp.protocol")


def guarded(handler: Callable[..., Any]) -> Callable[..., Any]:
    """Turn any unexpected exception into -32603 with a correlation id, never its text."""

    @functools.wraps(handler)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        except JsonRpcError:
            raise
        except Exception:
            correlation_id = new_correlation_id()
            log.exception("handler %s failed (correlation id %s)", handler.__name__, correlation_id)
            raise RpcError(INTERNAL_ERROR, "Internal error", {"correlationId": correlation_id}) from None

    return wrapper


def server_capabilities(ctx: RequestContext) -> dict[str, Any]:
    """The capabilities this server implements, exactly."""
    return ctx.core.capabilities()


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


@method(name="initialize")
@guarded
def initialize(
    ctx: RequestContext,
    protocolVersion: Any,
    capabilities: Any = None,
    clientInfo: Any = None,
    **_: Any,
) -> Any:
    """Negotiate the protocol version and tell the client what this server offers."""
    session = ctx.session
    if session.negotiated:
        raise RpcError(INVALID_REQUEST, "This session is already initialized; open a new session to start again")
    session.protocol_version = negotiate(protocolVersion)
    session.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
    session.client_info = clientInfo if isinstance(clientInfo, dict) else {}
    ctx.core.hub.save_session(session)
    settings = ctx.core.settings
    result: dict[str, Any] = {
        "protocolVersion": session.protocol_version,
        "capabilities": server_capabilities(ctx),
        "serverInfo": ctx.core.server_info(),
    }
    if settings.instructions:
        result["instructions"] = settings.instructions
    return Success(result)


@method(name="notifications/initialized")
@guarded
def initialized(ctx: RequestContext, **_: Any) -> Any:
    """Mark the session ready for server-initiated requests."""
    if ctx.session.negotiated and not ctx.session.initialized:
        ctx.session.initialized = True
        ctx.core.hub.save_session(ctx.session)
    return Success(None)


@method(name="ping")
@guarded
def ping(ctx: RequestContext, **_: Any) -> Any:
    """Answer a liveness check with an empty result."""
    return Success({})


@method(name="tools/list")
@guarded
def tools_list(ctx: RequestContext, cursor: Any = None, **_: Any) -> Any:
    """List the tools this session's principal may call, one page at a time."""
    tools = [t for t in ctx.core.registry.tools.values() if ctx.core.permits(ctx.session, "tool", t.name)]
    page, next_cursor = paginate(tools, cursor, ctx.core.settings.page_size)
    version = ctx.session.protocol_version
    result: dict[str, Any] = {"tools": [tool_definition(t, version) for t in page]}
    if next_cursor:
        result["nextCursor"] = next_cursor
    return Success(result)


@method(name="tools/call")
@guarded
def tools_call(ctx: RequestContext, name: Any, arguments: Any = None, **_: Any) -> Any:
    """Validate the arguments and run the named tool."""
    tool = ctx.core.registry.tools.get(name) if isinstance(name, str) else None
    if tool is None:
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name!r}; call tools/list to see the tools", {"tool": name})
    ctx.core.require_permission(ctx.session, "tool", tool.name)
    return Success(run_tool(ctx, tool, {} if arguments is None else arguments))

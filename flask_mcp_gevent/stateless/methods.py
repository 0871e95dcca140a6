"""The 2026-07-28 wire's method table: the shared handlers, less the handshake, ping, setLevel and per-session
subscriptions; its own tools/call (input rounds, the tasks extension), server/discover and subscriptions/listen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jsonrpcserver import Success

from flask_mcp_gevent.protocol.instructions import server_instructions
from flask_mcp_gevent.protocol.methods import SESSION_METHODS, server_capabilities, server_info
from flask_mcp_gevent.protocol.request_context import RequestContext, guarded
from flask_mcp_gevent.protocol.tools import find_tool, run_tool
from flask_mcp_gevent.stateless.input_rounds import run_rounds
from flask_mcp_gevent.stateless.listen import subscriptions_listen
from flask_mcp_gevent.stateless.metadata import supported_versions
from flask_mcp_gevent.stateless.results import cache_hint, discover_result
from flask_mcp_gevent.tasks.methods import call_task_tool, tasks_cancel, tasks_get, tasks_update

__all__ = ["REMOVED_IN_2026", "STATELESS_METHODS", "STATELESS_METHOD_NAMES"]


@guarded
def stateless_tools_call(ctx: RequestContext, name: Any, arguments: Any = None, **_: Any) -> Any:
    """Run the named tool on the 2026-07-28 wire: as a task (the tasks extension), or through the input rounds."""
    tool = find_tool(ctx, name)
    arguments = {} if arguments is None else arguments
    if tool.task is not None:
        return Success(call_task_tool(ctx, tool, arguments))  # a task, or at once
    return Success(run_rounds(ctx, lambda: run_tool(ctx, tool, arguments)))


@guarded
def server_discover(ctx: RequestContext, **_: Any) -> Any:
    """Tell a 2026-07-28 client the versions, capabilities, instructions and identity of this server."""
    settings = ctx.settings
    return Success(discover_result(server_capabilities(ctx.session.protocol_version), server_info(settings),
                                   server_instructions(ctx), cache_hint(ctx.checks_permissions),
                                   supported_versions(settings.session_era)))


# The 2026-07-28 wire's table: no handshake, ping, setLevel or per-session subscriptions; server/discover instead,
# and subscriptions/listen (flask_mcp_gevent.stateless.listen) in place of resources/subscribe and the GET stream.
REMOVED_IN_2026 = frozenset({
    "initialize", "notifications/initialized", "ping", "logging/setLevel", "resources/subscribe",
    "resources/unsubscribe", "notifications/roots/list_changed",
})
STATELESS_METHODS: dict[str, Callable[..., Any]] = {
    **{name: handler for name, handler in SESSION_METHODS.items() if name not in REMOVED_IN_2026},
    # The session era's tools/call runs the tool and nothing else; this wire's may ask (input rounds) or be a task.
    "tools/call": stateless_tools_call,
    "server/discover": server_discover,
    "subscriptions/listen": guarded(subscriptions_listen),
    # The tasks extension (flask_mcp_gevent.tasks.methods).
    "tasks/get": guarded(tasks_get),
    "tasks/update": guarded(tasks_update),
    "tasks/cancel": guarded(tasks_cancel),
}

# The 2026-07-28 wire's method names, which its transports check a request against before dispatch.
STATELESS_METHOD_NAMES = frozenset(STATELESS_METHODS)

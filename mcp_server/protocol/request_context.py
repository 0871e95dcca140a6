"""RequestContext: what a protocol handler, and through `ctx` a tool, gets for one request."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_server.errors import RpcError
from mcp_server.session import Session
from mcp_tools import ToolError

if TYPE_CHECKING:
    from mcp_server.dispatcher import Dispatcher

__all__ = ["LOG_LEVELS", "RequestContext", "level_allows"]

# RFC 5424 severities, least to most severe, as MCP names them.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_CLIENT_LOG_LEVEL = "debug"

log = logging.getLogger("mcp.context")


def level_allows(threshold: str | None, level: str) -> bool:
    """True when a message at level passes a session whose threshold is given."""
    floor = LOG_LEVELS.index(threshold or DEFAULT_CLIENT_LOG_LEVEL)
    return LOG_LEVELS.index(level) >= floor


@dataclass
class RequestContext:
    """The session, the request and a way to send messages that belong to it."""

    core: Dispatcher
    session: Session
    send: Callable[[dict[str, Any]], Any]
    request_id: Any = None
    method: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # completion/complete: the arguments the client already resolved (context.arguments).
    arguments: dict[str, Any] = field(default_factory=dict)
    _last_progress: float | None = None
    # Set when the session store's outage stopped the handler (a notification has no response to say so).
    store_unavailable: bool = False

    @property
    def session_id(self) -> str:
        """The session this request belongs to."""
        return self.session.id

    @property
    def settings(self) -> Any:
        """The server's settings (read-only)."""
        return self.core.settings

    @property
    def registry(self) -> Any:
        """The live registry: add or remove tools, resources and prompts; clients are told."""
        return self.core.registry

    @property
    def principal(self) -> str | None:
        """Who opened the session (None when authentication is off)."""
        return self.session.principal

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification that belongs to this request."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress if the client asked for it; values must strictly increase."""
        token = self.meta.get("progressToken")
        if token is None:
            return
        if self._last_progress is not None and progress <= self._last_progress:
            log.warning("dropped non-increasing progress %s after %s", progress, self._last_progress)
            return
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.notify("notifications/progress", params)

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send notifications/message when the session's level lets it through."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        if not level_allows(self.session.log_level, level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.notify("notifications/message", params)

    def sample(self, messages: list[dict[str, Any]], max_tokens: int, **params: Any) -> dict[str, Any]:
        """Ask the client's model for a message (sampling/createMessage)."""
        self._require_capability("sampling")
        return self._ask("sampling/createMessage", {"messages": messages, "maxTokens": max_tokens, **params})

    def elicit(self, message: str, requested_schema: dict[str, Any]) -> dict[str, Any]:
        """Ask the client's user for input (elicitation/create)."""
        self._require_capability("elicitation")
        return self._ask("elicitation/create", {"message": message, "requestedSchema": requested_schema})

    def list_roots(self) -> list[dict[str, Any]]:
        """Ask the client for its roots (roots/list)."""
        self._require_capability("roots")
        return self._ask("roots/list", {}).get("roots", [])

    def close_stream(self) -> None:
        """End this request's SSE stream now (Streamable HTTP); the client resumes it with Last-Event-ID."""
        close = getattr(self.send, "close_stream", None)
        if close is not None:
            close()

    def resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to uri that it changed."""
        self.core.resource_updated(uri)

    def _require_capability(self, name: str) -> None:
        """Fail the tool clearly when the client did not declare a capability."""
        if name not in (self.session.client_capabilities or {}):
            raise ToolError(f"The client did not declare the '{name}' capability, so this tool cannot use it")

    def _ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request to the client, wait for the answer, and return its result."""
        try:
            response = self.core.hub.request(
                self.session.id, method, params, self.core.settings.client_request_timeout_s, send=self.send
            )
        except RpcError as exc:
            raise ToolError(exc.message) from None
        if "error" in response:
            error = response["error"] if isinstance(response["error"], dict) else {}
            raise ToolError(f"The client refused {method}: {error.get('message', 'no reason given')}")
        result = response.get("result")
        return result if isinstance(result, dict) else {}

"""What a tool, resource or prompt may ask of the server while it runs.

Declare a parameter named `ctx` and the server passes an object with these methods.
It is a Protocol so that this package never imports the server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_tools._registry import Registry

__all__ = ["Completion", "Context", "ResourceNotFound", "ToolError"]


class ToolError(Exception):
    """Raise to fail a tool call with a message that is safe to show the client."""


class ResourceNotFound(LookupError):
    """Raise from a resource reader when the URI names nothing; the client gets -32002."""


@dataclass(frozen=True)
class Completion:
    """What a completer may return instead of an iterable: its values, and whether it stopped before the end."""

    values: Sequence[str]
    # True when the completer gave up looking (a bound on its work), so there may be values it never saw.
    has_more: bool = False


class Context(Protocol):
    """The request context a tool receives as `ctx`."""

    session_id: str
    principal: str | None
    request_id: str | int | None
    # The server's Settings; `settings.extra` maps every MCP_* environment variable to its text, so a tool
    # reads its own setting as `ctx.settings.extra.get("MCP_MY_TOOL_LIMIT", "10")`.
    settings: Any
    # The server's registry: add or remove tools, resources and prompts at run time.
    registry: Registry

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress; a no-op when the client sent no progress token."""

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a notifications/message log entry if the session's level lets it through."""

    def sample(self, messages: list[dict[str, Any]], max_tokens: int, **params: Any) -> dict[str, Any]:
        """Ask the client's model for a completion (sampling/createMessage)."""

    def elicit(self, message: str, requested_schema: dict[str, Any]) -> dict[str, Any]:
        """Ask the client's user for structured input (elicitation/create)."""

    def list_roots(self) -> list[dict[str, Any]]:
        """Ask the client for its filesystem roots (roots/list)."""

    def close_stream(self) -> None:
        """End this request's event stream early (Streamable HTTP); the client resumes it later."""

    def resource_updated(self, uri: str) -> None:
        """Tell subscribed sessions that the resource at uri changed."""

"""What a tool, resource or prompt may ask of the server while it runs.

Declare a parameter named `ctx` and the server passes an object with these methods.
It is a Protocol, so that the toolkit never imports the protocol layer's RequestContext, which implements it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from flask_mcp_gevent.toolkit.registry import Registry

__all__ = ["Context", "InputRequest", "ProtocolError", "ResourceNotFound", "ToolError"]


class ToolError(Exception):
    """Raise to fail a tool call with a message that is safe to show the client."""


class ProtocolError(Exception):
    """Raise to answer a tool call with a JSON-RPC error (a task: `failed`) instead of a tool result.

    ToolError is a result the model reads and may correct; this is for a request the server cannot serve at
    all. The message is shown to the client as it is, so it must be safe to show.
    """

    def __init__(self, message: str, code: int = -32603, data: Any = None) -> None:
        """Keep the JSON-RPC error's code, message and data."""
        super().__init__(message)
        self.code = code
        self.data = data


class ResourceNotFound(LookupError):
    """Raise from a resource reader when the URI names nothing; the client gets -32002."""


@dataclass(frozen=True)
class InputRequest:
    """One question for the client, for `ctx.ask_all`: build it with elicitation(), sampling() or roots().

    key names the question on the 2026-07-28 wire (its inputRequests key); None numbers it by ask order.
    """

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    key: str | None = None

    @classmethod
    def elicitation(cls, message: str, requested_schema: dict[str, Any], key: str | None = None) -> InputRequest:
        """Ask the user for structured input (elicitation/create, form mode)."""
        return cls("elicitation/create", {"message": message, "requestedSchema": requested_schema}, key)

    @classmethod
    def elicitation_url(cls, message: str, url: str, key: str | None = None) -> InputRequest:
        """Send the user to a URL (elicitation/create, url mode; the client must declare elicitation.url)."""
        return cls("elicitation/create", {"mode": "url", "message": message, "url": url}, key)

    @classmethod
    def sampling(cls, messages: list[dict[str, Any]], max_tokens: int, key: str | None = None,
                 **params: Any) -> InputRequest:
        """Ask the client's model for a message (sampling/createMessage)."""
        return cls("sampling/createMessage", {"messages": messages, "maxTokens": max_tokens, **params}, key)

    @classmethod
    def roots(cls, key: str | None = None) -> InputRequest:
        """Ask the client for its roots (roots/list); the answer is the list of roots."""
        return cls("roots/list", {}, key)


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
    # A JSON value the tool carries between rounds on the 2026-07-28 wire: set it before asking, read it on the
    # retry (None on the first run). Sealed in the requestState; keep it small (MCP_REQUEST_STATE_MAX_BYTES).
    round_state: Any

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress; a no-op when the client sent no progress token."""

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a notifications/message log entry if the session's level lets it through."""

    # Asking the client. In a 2025-era session each ask is a server-to-client request and waits for its answer.
    # On the 2026-07-28 wire an unanswered ask ends this run with an input_required result; the client's retry
    # runs the tool AGAIN FROM THE TOP and each ask returns its answer: work before an ask must be safe to repeat,
    # and so must work after the last ask, unless consume_answers() comes first (a client may replay that round).
    def sample(self, messages: list[dict[str, Any]], max_tokens: int, key: str | None = None,
               **params: Any) -> dict[str, Any]:
        """Ask the client's model for a completion (sampling/createMessage)."""

    def elicit(self, message: str, requested_schema: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        """Ask the client's user for structured input (elicitation/create); the answer has action and content."""

    def list_roots(self, key: str | None = None) -> list[dict[str, Any]]:
        """Ask the client for its filesystem roots (roots/list)."""

    def ask_all(self, requests: Sequence[InputRequest]) -> list[Any]:
        """Ask several questions at once (one round on the 2026-07-28 wire, in turn before); answers in order."""

    def consume_answers(self) -> None:
        """Call after the last ask and before an effect that must not repeat: the answers then work only once.

        On the 2026-07-28 wire a client may send the last round's requestState again, rerunning the tool; after
        this call the store records the state as used, and a replay gets -32602 (data.reason "used") here, before
        the effect. Answers sent without a requestState are asked for again (input_required) and go on only on
        the retry carrying the new state. Ask nothing after it. A no-op in a 2025-era session and in a task.
        """

    def client_supports(self, capability: str) -> bool:
        """Whether the client declared a capability (sampling, elicitation, roots) for this request."""

    def start_task(self) -> None:
        """Become a task here (a tool declared with ask_before_task=True); a no-op everywhere else.

        The task runs the tool AGAIN FROM THE TOP with the answers given so far, so work before this is repeated.
        """

    def close_stream(self) -> None:
        """End this request's event stream early (Streamable HTTP); the client resumes it later."""

    def resource_updated(self, uri: str) -> None:
        """Tell subscribed sessions that the resource at uri changed."""

"""RequestContext: what a protocol handler, and through `ctx` a tool, gets for one request; `guarded`, how it gets it.

It is the protocol layer's only door to the server: the registry, the settings, a permission check (the caller's
own grants, carried with the request), changing the session, asking the client and telling subscribers. The
server hands it the few collaborators it needs (`RequestServices`), never itself. Every handler is `guarded`:
called with its context first, its params checked against its signature, and any failure of its own answered as
-32603.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import gevent
from jsonrpcserver.exceptions import JsonRpcError

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    PERMISSION_DENIED,
    REQUEST_TIMEOUT,
    SERVER_UNAVAILABLE,
    STORE_UNAVAILABLE_MESSAGE,
    RpcError,
    new_correlation_id,
)
from flask_mcp_gevent.session import Session, SessionChange, SessionUpdate
from flask_mcp_gevent.stateless.input_rounds import (
    CAPABILITY_OF,
    InputRequired,
    Rounds,
    StartTask,
    ask_stateless,
    consume_round,
)
from flask_mcp_gevent.toolkit.context import InputRequest, ToolError
from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.without_gevent import question_refusal

if TYPE_CHECKING:
    from flask_mcp_gevent.auth.principal import Principal
    from flask_mcp_gevent.config import Settings
    from flask_mcp_gevent.stateless.request_state import RequestStateCodec
    from flask_mcp_gevent.worker_calls import PendingRequests

__all__ = ["ANY_PARAMS", "HANDLER_STOPS", "LOG_LEVELS", "SESSION_ERA", "STATELESS_ERA", "TASK_BEFORE", "TASK_RUNNING",
           "RequestContext", "RequestServices", "call_directly", "guarded", "level_allows"]

# RFC 5424 severities, least to most severe, as MCP names them.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_CLIENT_LOG_LEVEL = "debug"
# RequestContext.era: the session era's sessions, or the 2026-07-28 stateless wire (an ephemeral session each).
SESSION_ERA = "session"
STATELESS_ERA = "stateless"
# RequestContext.task_phase: a tool declared ask_before_task, before its ctx.start_task(); a task's own run.
TASK_BEFORE = "before"
TASK_RUNNING = "running"

# The BaseExceptions that end a handler on purpose (a cancel or a stop, an input round, a task's start): passed on.
# Any other, a gevent.Timeout or SystemExit a tool let escape included, is the handler's failure and is answered.
HANDLER_STOPS = (gevent.GreenletExit, InputRequired, StartTask)

log = logging.getLogger("mcp.context")
handler_log = logging.getLogger("mcp.protocol")


def call_directly(work: Callable[[], Any]) -> Any:
    """Run work as it is: where no app's context wraps the calls (a server without a Flask app)."""
    return work()


def level_allows(threshold: str | None, level: str) -> bool:
    """True when a message at level passes a session whose threshold is given."""
    floor = LOG_LEVELS.index(threshold or DEFAULT_CLIENT_LOG_LEVEL)
    return LOG_LEVELS.index(level) >= floor


def finite_number(value: Any) -> bool:
    """Whether value is a number JSON can carry: an int or a float, not a bool, nan or an infinity."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class RequestServices:
    """What every request of one server shares: built once, handed to each RequestContext."""

    registry: Registry
    settings: Settings
    # The store's atomic session change, its waiting server-to-client requests, and its publish.
    update_session: Callable[[str, SessionChange], SessionUpdate]
    pending: PendingRequests
    publish: Callable[[str, dict[str, Any]], Any]
    # Tells every session of the fleet subscribed to a URI that it changed.
    resource_updated: Callable[[str], None]
    # The requestState codec (stateless/request_state.SharedCodec: built on first use, its key fleet-wide).
    request_state: Callable[[], RequestStateCodec] | None = None
    # The store's record of consumed multi-round requests (Store.use_once, Store.is_used): ctx.consume_answers()
    # writes it.
    use_once: Callable[[bytes, float], bool] | None = None
    is_used: Callable[[bytes], bool] | None = None
    # This worker's subscriptions/listen streams (flask_mcp_gevent.stateless.listen.ListenRegistry).
    listeners: Any = None
    # The tasks extension: this worker's task runner (flask_mcp_gevent.tasks.runner.TaskRunner).
    tasks: Any = None
    # Runs a request's handler (and so the tool, resource, prompt or completer it calls) inside the Flask app's own
    # application context (web/app_context.py); call_directly where there is no app.
    run_in_app: Callable[[Callable[[], Any]], Any] = call_directly


@dataclass
class RequestContext:
    """The session, the request and a way to send messages that belong to it."""

    services: RequestServices
    session: Session
    # Where this request's messages go; None sends server-to-client requests on the session's own stream.
    send: Callable[[dict[str, Any]], Any] | None
    request_id: Any = None
    method: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    # "stateless" on the 2026-07-28 wire, where the session is built from this request's _meta and never stored.
    era: str = SESSION_ERA
    # The request's params as sent, _meta aside (multi round-trip requests read inputResponses, requestState here).
    params: dict[str, Any] = field(default_factory=dict)
    # completion/complete: the arguments the client already resolved (context.arguments).
    arguments: dict[str, Any] = field(default_factory=dict)
    _last_progress: float | None = None
    # Set when the session store's outage stopped the handler (a notification has no response to say so).
    store_unavailable: bool = False
    # The tool's own state between rounds (stateless wire: sealed in requestState);
    # see flask_mcp_gevent.toolkit.context.Context.
    round_state: Any = None
    # This run's answers on the stateless wire, while a tools/call, prompts/get or resources/read runs.
    rounds: Rounds | None = None
    # The tasks extension: TASK_BEFORE or TASK_RUNNING while a task-capable tool runs as (or towards) a task.
    task_phase: str | None = None
    # Who sent the request, with what its credential grants (auth/principal.py); None where nobody is checked
    # (authentication off, stdio, the CLI: the local user may use everything).
    caller: Principal | None = None

    @property
    def session_id(self) -> str:
        """The session this request belongs to."""
        return self.session.id

    @property
    def settings(self) -> Settings:
        """The server's settings (read-only)."""
        return self.services.settings

    @property
    def registry(self) -> Registry:
        """The live registry: add or remove tools, resources and prompts; clients are told."""
        return self.services.registry

    @property
    def stateless(self) -> bool:
        """Whether this request came over the 2026-07-28 wire."""
        return self.era == STATELESS_ERA

    @property
    def principal(self) -> str | None:
        """Who opened the session (None when authentication is off)."""
        return self.session.principal

    @property
    def checks_permissions(self) -> bool:
        """Whether this request's caller is restricted to what its credential grants (authentication on)."""
        return self.caller is not None

    def permits(self, kind: str, name: str) -> bool:
        """Whether this request's caller may use the named tool, resource or prompt (everyone may without one)."""
        return self.caller is None or self.caller.allows(kind, name)

    def require(self, kind: str, name: str, target: str | None = None) -> None:
        """Raise -32001 when the session's principal may not use the named item (or target, what it really names).

        The error names the item as the client did: where a link points is none of its business.
        """
        if not self.permits(kind, name if target is None else target):
            raise RpcError(PERMISSION_DENIED, f"Permission denied: you may not use {kind} '{name}'", {kind: name})

    def visible(self, kind: str, table: dict[str, Any]) -> list[Any]:
        """The specs of a registry table (keyed by name or URI) that this session's principal may use."""
        return [spec for key, spec in table.items() if self.permits(kind, key)]

    def change_session(self, change: SessionChange) -> bool:
        """Apply a change to the stored session atomically, then bring self.session in step; False if refused."""
        if not self.session.stored:
            return change.apply(self.session)  # stdio's session is its connection's: nothing else changes it
        applied, stored = self.services.update_session(self.session.id, change)
        if stored is None:
            # Closed or expired meanwhile: nothing is stored, and the request's own copy still answers it.
            return change.apply(self.session)
        self.session.take_fields(stored)
        return applied

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification that belongs to this request."""
        self._send_to_client({"jsonrpc": "2.0", "method": method, "params": params})

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress if the client asked for it; values must strictly increase."""
        token = self.meta.get("progressToken")
        if token is None:
            return
        if not finite_number(progress) or (total is not None and not finite_number(total)):
            # JSON has no nan or infinity: sent, they would read as null, which no client takes for progress.
            log.warning("dropped progress %r of %r: both must be finite numbers", progress, total)
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
        if self.era == STATELESS_ERA and self.session.log_level is None:
            return  # 2026-07-28: no notifications/message for a request without _meta logLevel
        if not level_allows(self.session.log_level, level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.notify("notifications/message", params)

    def sample(self, messages: list[dict[str, Any]], max_tokens: int, key: str | None = None,
               **params: Any) -> dict[str, Any]:
        """Ask the client's model for a message (sampling/createMessage)."""
        return self.ask_all([InputRequest.sampling(messages, max_tokens, key, **params)])[0]

    def elicit(self, message: str, requested_schema: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        """Ask the client's user for input (elicitation/create)."""
        return self.ask_all([InputRequest.elicitation(message, requested_schema, key)])[0]

    def list_roots(self, key: str | None = None) -> list[dict[str, Any]]:
        """Ask the client for its roots (roots/list)."""
        return self.ask_all([InputRequest.roots(key)])[0]

    def ask_all(self, requests: Sequence[InputRequest]) -> list[Any]:
        """Ask several questions: one round on the stateless wire, one request after another in a session."""
        if self.stateless:
            answers = ask_stateless(self, list(requests))
        else:
            answers = []
            for request in requests:
                self._require_capability(CAPABILITY_OF[request.method])
                answers.append(self._ask(request.method, request.params))
        return [answer.get("roots", []) if request.method == "roots/list" else answer
                for request, answer in zip(requests, answers, strict=True)]

    def client_supports(self, capability: str) -> bool:
        """Whether the client declared a capability (for the session, or on the stateless wire for this request)."""
        return isinstance((self.session.client_capabilities or {}).get(capability), dict)

    def start_task(self) -> None:
        """Become a task here, in a tool declared ask_before_task that runs towards one; elsewhere a no-op."""
        if self.task_phase == TASK_BEFORE:
            raise StartTask(dict(self.rounds.used) if self.rounds is not None else {}, self.round_state)

    def consume_answers(self) -> None:
        """Make this run's answers single-use before an effect (2026-07-28 wire; a no-op elsewhere and in a task)."""
        if self.stateless and self.task_phase != TASK_RUNNING:
            consume_round(self)

    def close_stream(self) -> None:
        """End this request's SSE stream now (Streamable HTTP); the client resumes it with Last-Event-ID."""
        close = getattr(self.send, "close_stream", None)
        if close is not None:
            close()

    def resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to uri that it changed."""
        self.services.resource_updated(uri)

    def _require_capability(self, name: str) -> None:
        """Fail the tool clearly when the client did not declare a capability."""
        if name not in (self.session.client_capabilities or {}):
            raise ToolError(f"The client did not declare the '{name}' capability, so this tool cannot use it")

    def _ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request to the client, wait for the answer, and return its result."""
        try:
            response = self.ask(method, params, self.settings.client_request_timeout_s)
        except RpcError as exc:
            raise ToolError(exc.message) from None
        if "error" in response:
            error = response["error"] if isinstance(response["error"], dict) else {}
            raise ToolError(f"The client refused {method}: {error.get('message', 'no reason given')}")
        result = response.get("result")
        return result if isinstance(result, dict) else {}

    def ask(self, method: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send a request to the client and wait for its answer (a response message); RpcError(-32003) on timeout."""
        # Where the server is not gevent's, a question that could never be answered fails now (without_gevent.py).
        refusal = question_refusal(method, own_stream=getattr(self.send, "close_stream", None) is not None)
        if refusal is not None:
            raise refusal
        pending = self.services.pending
        request_id, result = pending.open(self.session.id)
        try:
            self._send_to_client({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            try:
                return result.get(timeout=timeout)
            except gevent.Timeout:
                self._tell_client_cancelled(request_id)
                raise RpcError(REQUEST_TIMEOUT, f"The client did not answer {method} within {timeout:g} s") from None
        finally:
            pending.forget(self.session.id, request_id)

    def _send_to_client(self, message: dict[str, Any]) -> None:
        """Send a server-to-client message on this request's way out, or on the session's stream without one."""
        if self.send is not None:
            self.send(message)
        else:
            self.services.publish(self.session.id, message)

    def _tell_client_cancelled(self, request_id: str) -> None:
        """Tell the client we gave up on a request, as the cancellation rules ask."""
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "timed out"},
        }
        try:
            self._send_to_client(note)
        except Exception:  # the stream may be gone; the timeout is what matters
            log.debug("could not send cancellation for %s", request_id)


# how a handler is called
# What jsonrpcserver binds params against: anything goes, so that guarded checks them and says what is wrong.
ANY_PARAMS = inspect.Signature([
    inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_ONLY),
    inspect.Parameter("params", inspect.Parameter.VAR_KEYWORD),
])


def quoted_names(names: list[str]) -> str:
    """'a', or 'a' and 'b', or 'a', 'b' and 'c'."""
    quoted = [f"'{name}'" for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def params_problem(ctx: RequestContext, context_name: str, required: list[str], params: dict[str, Any]) -> str | None:
    """What is wrong with a request's params for a handler, in the protocol's words; None when they fit."""
    if context_name in params:
        return f"Invalid params: '{context_name}' is not a parameter of {ctx.method}"
    missing = [name for name in required if name not in params]
    if missing:
        return f"Invalid params: {quoted_names(missing)} {'is' if len(missing) == 1 else 'are'} required"
    return None


def guarded(handler: Callable[..., Any]) -> Callable[..., Any]:
    """Check params against the handler's signature, and turn any unexpected exception into -32603 with an id.

    Neither a binding failure nor an exception's text reaches the client: both would be Python's words.
    """
    context, *parameters = inspect.signature(handler).parameters.values()
    context_name = context.name
    required = [p.name for p in parameters
                if p.default is inspect.Parameter.empty and p.kind is not inspect.Parameter.VAR_KEYWORD]

    @functools.wraps(handler)
    def wrapper(ctx: RequestContext, /, **params: Any) -> Any:
        problem = params_problem(ctx, context_name, required, params)
        if problem is not None:
            raise RpcError(INVALID_PARAMS, problem)
        try:
            return handler(ctx, **params)
        except JsonRpcError:
            raise
        except StoreUnavailable:
            # The store stalled mid-request: the documented -32004, with HTTP 503 where a status can still go out.
            ctx.store_unavailable = True
            raise RpcError(SERVER_UNAVAILABLE, STORE_UNAVAILABLE_MESSAGE) from None
        except HANDLER_STOPS:
            raise
        except BaseException:  # a gevent.Timeout or SystemExit would leave the request unanswered
            correlation_id = new_correlation_id()
            handler_log.exception("handler %s failed (correlation id %s)", handler.__name__, correlation_id)
            raise RpcError(INTERNAL_ERROR, "Internal error", {"correlationId": correlation_id}) from None

    # jsonrpcserver asks for the signature on every call; set here instead of unwrapped to the handler's each time.
    wrapper.__signature__ = ANY_PARAMS  # type: ignore[attr-defined]
    return wrapper

"""Dispatcher: one dispatcher that every transport (legacy SSE, Streamable HTTP, stdio) shares.

A transport parses bytes into `messages.Body`, then asks the dispatcher to accept it:
notifications and client responses are handled at once, each request runs in its
own greenlet (so a slow tool never blocks the session, and cancellation can kill
it), and the transport decides where the answers go. A request reaches its handler
in the method tables through jsonrpcserver's steps after parsing (`jsonrpc_dispatch`):
its own entry point would parse, validate and batch-split again what messages.py did.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import gevent
import gevent.event
from jsonrpcserver.dispatcher import call, dispatch_request, to_response
from jsonrpcserver.request import Request as JsonRpcRequest
from jsonrpcserver.response import ServerErrorResponse, to_serializable_one
from jsonrpcserver.sentinels import NOID
from oslash.either import Left

from flask_mcp_gevent import notifications
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SERVER_UNAVAILABLE,
    error_response,
)
from flask_mcp_gevent.hub import Hub, HubUnavailable, Subscription, create_hub
from flask_mcp_gevent.limits import CallSlots, SessionQuota
from flask_mcp_gevent.logs import log_line, loggable
from flask_mcp_gevent.messages import NOTIFICATION, REQUEST, RESPONSE, Body, Message
from flask_mcp_gevent.metrics import instruments, label_methods
from flask_mcp_gevent.protocol.listen import SHUTTING_DOWN, ListenLimits, ListenRegistry
from flask_mcp_gevent.protocol.methods import METHODS, STATELESS_METHODS, server_info
from flask_mcp_gevent.protocol.request_context import (
    ANY_PARAMS,
    LOG_LEVELS,
    SESSION_ERA,
    STATELESS_ERA,
    RequestContext,
    RequestServices,
    call_directly,
)
from flask_mcp_gevent.protocol.task_runner import TaskRunner
from flask_mcp_gevent.session import Session, allows_batches
from flask_mcp_gevent.stateless.request_state import SharedCodec
from flask_mcp_gevent.stateless.results import dress_response
from flask_mcp_gevent.stateless.validation import check_header_annotations
from flask_mcp_gevent.toolkit.registry import Registry

if TYPE_CHECKING:
    from flask_mcp_gevent.auth.principal import Principal

__all__ = ["Dispatcher", "discard", "jsonrpc_dispatch"]

log = logging.getLogger("mcp.rpc")
# Requests a client may send before initialize has been answered.
ALLOWED_BEFORE_INIT = frozenset({"initialize", "ping"})
# Requests that notifications/cancelled may not stop, as the cancellation rules say.
UNCANCELLABLE = frozenset({"initialize"})

Send = Callable[[dict[str, Any]], Any]


def discard(message: dict[str, Any]) -> None:
    """The send of a request that has no stream: the client asked for nothing it could carry."""
    log.debug("dropped %s: the request asked for no stream", loggable(message.get("method")))


def jsonrpc_dispatch(methods: dict[str, Any], ctx: Any, message: Message) -> dict[str, Any] | None:
    """One message through jsonrpcserver's dispatch (lookup, binding, call, Success/Error); its response, or None."""
    method = message.method or ""  # set on every request and notification: only those come here
    request = JsonRpcRequest(method, message.params, message.id if message.kind == REQUEST else NOID)
    try:
        handler = methods.get(method)
        if handler is not None and getattr(handler, "__signature__", None) is ANY_PARAMS:
            # A guarded handler binds any params and checks them itself, so jsonrpcserver's binding has nothing to do.
            result = call(request, ctx, handler)
        else:
            _, result = dispatch_request(methods, ctx, request)
        return None if request.id is NOID else serialized(to_response(request, result))
    except Exception:
        # As jsonrpcserver's entry point does: a failure of the library itself is a server error.
        log.exception("jsonrpcserver failed on %s", loggable(message.method))
        return serialized(Left(ServerErrorResponse("Server error", message.id)))


def serialized(response: Any) -> dict[str, Any]:
    """One response as a dict: to_serializable_one's annotation allows a list or None, but one response is a dict."""
    return cast("dict[str, Any]", to_serializable_one(response))


class CallStopped(gevent.GreenletExit):
    """Raised in a call's greenlet when the worker stops before the call finished."""


CALL_STOPPED_MESSAGE = "Server shutting down: the call was stopped before it finished; call it again"


class Dispatcher:
    """Settings, registry and hub, plus the request lifecycle every transport uses."""

    def __init__(self, settings: Settings, registry: Registry | None = None, hub: Hub | None = None,
                 run_in_app: Callable[[Callable[[], Any]], Any] = call_directly) -> None:
        """run_in_app runs each request's handler in the Flask app's context (web/app_context.py)."""
        self.settings = settings
        label_methods({**METHODS, **STATELESS_METHODS})
        self.registry = registry if registry is not None else Registry.discover(plugins=settings.plugins)
        check_header_annotations(self.registry.tools.values())
        self.hub = hub if hub is not None else create_hub(settings)
        self.stopping_since: float | None = None
        self.drained: gevent.event.Event | None = None
        self.registry.on_change(lambda kind: notifications.announce_list_changed(self.hub, kind))
        self.hub.share_registry(self.registry)
        # This worker's subscriptions/listen streams, fed with every change made anywhere in the fleet.
        self.listeners = ListenRegistry(settings.queue_max, settings.queue_max_bytes,
                                        settings.max_listens_per_principal, ListenLimits.from_settings(settings))
        self.hub.worker_listener = self.listeners.deliver
        # The tasks extension's tasks running on this worker; the tasks themselves live in the hub.
        self.tasks = TaskRunner(lambda: self.hub.tasks, settings, lambda message: self.hub.tell_every_worker(message))
        self.services = RequestServices(
            registry=self.registry, settings=settings, run_in_app=run_in_app,
            # Looked up on each call, so the hub stays free to change (tests stall it to play an outage).
            update_session=lambda session_id, change: self.hub.update_session(session_id, change),
            pending=self.hub.pending,
            publish=lambda session_id, message: self.hub.publish(session_id, message),
            resource_updated=lambda uri: notifications.resource_updated(self.hub, uri),
            request_state=SharedCodec(settings, lambda name: self.hub.shared_secret(name)),
            use_once=lambda rounds_id, ttl_s: self.hub.use_once(rounds_id, ttl_s),
            is_used=lambda rounds_id: self.hub.is_used(rounds_id),
            listeners=self.listeners,
            tasks=self.tasks,
        )
        self.tasks.services = self.services
        # Set by flask_mcp_gevent.web.rate_limit when MCP_RATE_LIMIT is on: charges a batch's messages beyond the first.
        self.charge_batch: Callable[[int], None] | None = None
        self.session_quota = SessionQuota(self.hub, settings)
        self.call_slots = CallSlots(self.hub, settings.max_concurrent_calls)
        self.server_info = server_info(settings)

    # session lifecycle
    def open_session(self, transport: str, principal: str | None = None, address: str | None = None) -> Session:
        """Create and store a new session; CapacityError when the server, the principal or the address holds enough.

        address is the client's (REMOTE_ADDR); it bounds the sessions of clients without a principal.
        """
        session = Session(transport=transport, principal=principal)
        self.session_quota.create(session, address)
        instruments().session_opened(transport)
        return session

    def subscribe(self, session_id: str, last_event_id: str | None = None, *, exclusive: bool = False
                  ) -> Subscription:
        """Attach a stream through the hub; on a worker already stopping, it ends after what it missed.

        A stream can still arrive after shutdown() (on a connection accepted just before): ended here, its
        client resumes on a worker that stays, instead of holding this one until graceful_timeout cuts it.
        """
        subscription = self.hub.subscribe(session_id, last_event_id, exclusive=exclusive)
        if self.stopping_since is not None:
            subscription.end(SHUTTING_DOWN)
        return subscription

    # message handling
    def batch_error(self, session: Session, body: Body) -> dict[str, Any] | None:
        """Reject a batch unless the session negotiated the one version that has them."""
        if body.is_batch and not allows_batches(session.protocol_version):
            return error_response(
                None,
                INVALID_REQUEST,
                f"Invalid Request: JSON-RPC batches are not part of protocol version "
                f"{session.protocol_version or 'in use'}; send one message per request",
            )
        return None

    def accept(self, session: Session, body: Body, send: Send, on_done: Send | None = None,
               caller: Principal | None = None) -> tuple[list[gevent.Greenlet], list[dict[str, Any]]]:
        """Handle notifications and responses now; start each request; return greenlets and immediate errors.

        on_done, when given, receives each request's response in the request's own greenlet. caller is who sent
        the body (its requests may use what its credential grants; None: everything).
        """
        rejected = self.batch_error(session, body)
        if rejected is not None:
            return [], [rejected]
        running: list[gevent.Greenlet] = []
        errors: list[dict[str, Any]] = []
        for message in body.messages:
            if message.kind == REQUEST:
                running.append(self.start_request(session, message, send, on_done, caller))
            elif message.kind == NOTIFICATION:
                self.handle_notification(session, message, send)
            elif message.kind == RESPONSE:
                self.handle_response(session, message)
            elif message.error is not None:
                self.log_call(session, message.raw.get("method") if isinstance(message.raw, dict) else None,
                              message.id, message.error, 0.0)
                errors.append(message.error)
        return running, errors

    def start_request(self, session: Session, message: Message, send: Send, on_done: Send | None = None,
                      caller: Principal | None = None) -> gevent.Greenlet:
        """Run a request in its own greenlet; its value is the response, or None if cancelled."""
        greenlet = gevent.Greenlet(self.run_request, session, message, send, on_done, caller)
        if message.method not in UNCANCELLABLE:
            self.hub.inflight.add(session.id, message.id, greenlet)
        greenlet.start()
        return greenlet

    def run_here(self, session: Session, message: Message, caller: Principal | None = None) -> dict[str, Any] | None:
        """Run a request that has no stream in the caller's own greenlet (no spawn, no queue); its response.

        Tracked as in flight like a spawned one, so a shutdown's drain can stop it.
        """
        current = gevent.getcurrent()
        self.hub.inflight.add(session.id, message.id, current)
        try:
            return self.handle_request(session, message, discard, caller)
        finally:
            self.hub.inflight.discard(session.id, message.id, current)

    def run_request(self, session: Session, message: Message, send: Send, on_done: Send | None,
                    caller: Principal | None) -> dict[str, Any] | None:
        """The body of a request's greenlet: handle it, stop tracking it, hand the response on."""
        # Done here rather than with greenlet links: a link costs the hub's loop one more callback per request.
        try:
            response = self.handle_request(session, message, send, caller)
        finally:
            self.hub.inflight.discard(session.id, message.id, gevent.getcurrent())
        if on_done is not None and response is not None:
            # Out of the calls in flight (a cancel or the drain's stop would cut the answer), yet waited for.
            self.hub.inflight.store_answer(on_done, response)
        return response

    def handle_request(self, session: Session, message: Message, send: Send,
                       caller: Principal | None = None) -> dict[str, Any] | None:
        """Dispatch one request through jsonrpcserver, inside the app's context, and return its response."""
        started = time.perf_counter()
        slot = refusal = None
        stateless = session.stateless
        if not session.negotiated and message.method not in ALLOWED_BEFORE_INIT:
            refusal = error_response(
                message.id, INVALID_REQUEST, "Session not initialized: send initialize first, then this request"
            )
        elif stateless and session.log_level is not None and session.log_level not in LOG_LEVELS:
            refusal = error_response(message.id, INVALID_PARAMS,
                                     f"Invalid params: _meta logLevel must be one of {', '.join(LOG_LEVELS)}")
        elif message.method == "tools/call" and not stateless:
            # The limit is per session: a stateless request has none to count against.
            slot, refusal = self.call_slots.claim(session, message)
        if refusal is not None:
            response: dict[str, Any] | None = refusal
        else:
            ctx = RequestContext(self.services, session, send, message.id, message.method, message.meta,
                                 era=STATELESS_ERA if stateless else SESSION_ERA, params=message.params,
                                 caller=caller)
            methods = STATELESS_METHODS if stateless else METHODS
            try:
                response = self.services.run_in_app(lambda: jsonrpc_dispatch(methods, ctx, message))
            except CallStopped:
                # Stopped by a shutdown: answered, on the request's own way back (its POST, its stream).
                response = error_response(message.id, SERVER_UNAVAILABLE, CALL_STOPPED_MESSAGE)
            except gevent.GreenletExit:
                # Cancelled: the request ends here and, as the spec says, gets no response.
                self.log_call(session, message.method, message.id, None, time.perf_counter() - started)
                return None
            finally:
                if slot is not None:
                    self.call_slots.release(session.id, slot)
            response = self.polish(response, message.method)
        if stateless and isinstance(response, dict):
            response = dress_response(message, response, self.server_info, caller is not None)
        self.log_call(session, message.method, message.id, response, time.perf_counter() - started)
        return response

    def handle_notification(self, session: Session, message: Message, send: Send) -> None:
        """Act on a client notification; unknown ones are ignored, as JSON-RPC requires."""
        if message.method == "notifications/cancelled":
            request_id = message.params.get("requestId")
            if request_id is not None:
                self.hub.cancel(session.id, request_id)
            return
        if not (message.method or "").startswith("notifications/"):
            # A request method without an id would run unanswered, uncancellable and past the initialize gate.
            log.debug("ignored notification for request method %s in session %s", loggable(message.method),
                      session.id[:8])
            return
        ctx = RequestContext(self.services, session, send, None, message.method, message.meta)
        jsonrpc_dispatch(METHODS, ctx, message)
        if ctx.store_unavailable:
            # Not acknowledged: the POST gets 503, so the client sends the notification again.
            raise HubUnavailable("session store unreachable")

    def handle_response(self, session: Session, message: Message) -> None:
        """Route a client's answer to the tool that is waiting for it."""
        if not self.hub.resolve(session.id, message.raw):
            log.debug("no waiter for client response %s in session %s", loggable(message.id), session.id[:8])

    def polish(self, response: Any, method: str | None) -> Any:
        """Say which method was not found, rather than jsonrpcserver's bare message."""
        if isinstance(response, dict):
            error = response.get("error")
            if error and error.get("code") == METHOD_NOT_FOUND:
                error["message"] = f"Method not found: {method}"
                error.pop("data", None)
        return response

    def log_call(self, session: Session, method: Any, request_id: Any, response: Any, seconds: float) -> None:
        """Write the one log line each request gets."""
        if response is None:
            status = "cancelled"
        elif "error" in response:
            status = f"error:{response['error'].get('code')}"
        else:
            status = "ok"
        if log.isEnabledFor(logging.INFO):
            log_line(log, logging.INFO, f"rpc method={loggable(method)} id={loggable(request_id)} "
                     f"session={'-' if session.stateless else session.id[:8]} status={status} "
                     f"duration_ms={seconds * 1000.0:.2f}")
        instruments().count_request(method, response, seconds)

    def shutdown(self) -> None:
        """Close every stream promptly; calls in flight get until drain() to finish."""
        self.stopping_since = time.monotonic()
        self.listeners.shutdown()
        self.hub.shutdown()

    def drain(self) -> int:
        """Let calls in flight finish within half of graceful_timeout, then stop the rest with an error answer.

        Started as soon as the worker is told to stop, while gunicorn still serves its connections: a call
        answered on its POST (JSON, or a request's SSE stream) gets its answer, or the error, on that POST, and
        the worker's connections end before graceful_timeout. A legacy call's answer goes to the session's
        stream, and with the Redis hub waits in the replay log for the client to resume on another worker.
        Safe to call again (gunicorn's worker_exit does): a second call waits for the first to finish, since
        stopping a call twice would interrupt the answer it is giving. Returns how many calls were stopped.
        """
        if self.drained is not None:
            self.drained.wait(self.settings.graceful_timeout_s)
            return 0
        self.drained = gevent.event.Event()
        try:
            return self.stop_calls()
        finally:
            self.drained.set()

    def stop_calls(self) -> int:
        """Wait for tasks and calls until half of graceful_timeout has passed; stop the rest; return how many calls."""
        since = self.stopping_since if self.stopping_since is not None else time.monotonic()
        deadline = since + self.settings.graceful_timeout_s / 2
        if self.hub.outlives_worker:
            # Tasks too: those still running at the deadline are failed, so no client polls them for ever.
            self.tasks.drain(deadline - time.monotonic())
        inflight = self.hub.inflight
        running = inflight.running()
        # Not joinall: a request run in its POST's own greenlet is over while that greenlet lives on.
        inflight.wait_finished(running, max(0.0, deadline - time.monotonic()))
        stopped = [call for call in running if inflight.holds(*call)]
        for _session_id, _request_id, greenlet in stopped:
            greenlet.kill(CallStopped, block=False)
        # Each answers itself (handle_request).
        inflight.wait_finished(stopped, self.settings.graceful_timeout_s / 4)
        # The waits above end when a call leaves the calls in flight; a legacy call's greenlet then stores its
        # answer (Hub.deliver), maybe retrying through a Redis stall: the worker must not exit before it is stored.
        inflight.wait_answers_stored(self.settings.graceful_timeout_s / 4)
        if stopped:
            log.info("stopped %d call(s) still running at shutdown", len(stopped))
        return len(stopped)

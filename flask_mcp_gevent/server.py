"""Server: one app's MCP server, built once; every transport hands it messages through a narrow interface.

It holds what every connection shares: the settings, the registry, the store's ports (sessions, event log, fleet
bus), the listen streams, the task runner, and this worker's own state (the calls it runs, the answers its tools
wait for). A transport only moves messages: it opens, finds and closes sessions, attaches streams, hands a body in
(`accept`), and sends what comes out (`publish`, `deliver`); it never sees the store. Each request runs in its own
greenlet (so a slow tool never blocks the session, and cancellation can kill it), or in its POST's own when nothing
can come before its result, through its era's checks and method table (eras.py) inside the app's context. A request
reaches its handler through jsonrpcserver's steps after parsing (`jsonrpc_dispatch`): its own entry point would
parse, validate and batch-split again what messages.py did.
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
from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.eras import SESSION, STATELESS, era_of
from flask_mcp_gevent.errors import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    SERVER_UNAVAILABLE,
    error_response,
)
from flask_mcp_gevent.limits import CallSlots, SessionQuota
from flask_mcp_gevent.logs import log_line, loggable
from flask_mcp_gevent.messages import NOTIFICATION, REQUEST, RESPONSE, Body, Message
from flask_mcp_gevent.metrics import instruments, label_methods
from flask_mcp_gevent.protocol.methods import server_info
from flask_mcp_gevent.protocol.request_context import (
    ANY_PARAMS,
    RequestContext,
    RequestServices,
    call_directly,
)
from flask_mcp_gevent.session import Session, allows_batches
from flask_mcp_gevent.stateless.listen import SHUTTING_DOWN, ListenLimits, ListenRegistry
from flask_mcp_gevent.stateless.request_state import SharedCodec
from flask_mcp_gevent.stateless.validation import check_header_annotations
from flask_mcp_gevent.store import Store, create_store
from flask_mcp_gevent.subscription import Subscription
from flask_mcp_gevent.tasks.backend import task_store_for
from flask_mcp_gevent.tasks.runner import TaskRunner
from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.worker_calls import InflightCalls, PendingRequests

if TYPE_CHECKING:
    from flask_mcp_gevent.auth.principal import Principal

__all__ = ["Server", "answers_of", "discard", "jsonrpc_dispatch"]

log = logging.getLogger("mcp.rpc")
# Requests that notifications/cancelled may not stop, as the cancellation rules say.
UNCANCELLABLE = frozenset({"initialize"})

Send = Callable[[dict[str, Any]], Any]


def discard(message: dict[str, Any]) -> None:
    """The send of a request that has no stream: the client asked for nothing it could carry."""
    log.debug("dropped %s: the request asked for no stream", loggable(message.get("method")))


def answers_of(running: list[gevent.Greenlet], errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The responses to what accept refused and started, once every started request is done (a cancelled one has
    none): a batch's answer, or a lone request's awaited."""
    gevent.joinall(running)
    return errors + [greenlet.value for greenlet in running if isinstance(greenlet.value, dict)]


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


class Server:
    """One app's MCP server: what every connection shares, built once, and how each request runs."""

    def __init__(self, settings: Settings, registry: Registry | None = None, store: Store | None = None,
                 run_in_app: Callable[[Callable[[], Any]], Any] = call_directly) -> None:
        """registry: the app's declarations (None: mcp_tools/ discovered); store: the settings' (None: made here);
        run_in_app: how each request's handler runs in the Flask app's context (web/app_context.py)."""
        self.settings = settings
        label_methods({**SESSION.methods, **STATELESS.methods})
        self.registry = registry if registry is not None else Registry.discover(plugins=settings.plugins)
        check_header_annotations(self.registry.tools.values())
        self.store = store if store is not None else create_store(settings)
        self.sessions = self.store.sessions
        self.events = self.store.events
        self.fleet = self.store.fleet
        self.stopping_since: float | None = None
        self.drained: gevent.event.Event | None = None
        # This worker's own: the calls it runs (to cancel and drain them), the answers its tools wait for.
        self.calls = InflightCalls()
        self.questions = PendingRequests()
        # Sessions of this worker's own that no store keeps (stdio's client), to hand broadcasts to.
        self.local_sessions: dict[str, tuple[Session, Send]] = {}
        # This worker's subscriptions/listen streams, fed with every change made anywhere in the fleet.
        self.listeners = ListenRegistry(settings.queue_max, settings.queue_max_bytes,
                                        settings.max_listens_per_principal, ListenLimits.from_settings(settings))
        # The tasks extension's tasks running on this worker; the tasks themselves live beside the store.
        self.tasks = TaskRunner(task_store_for(self.store, settings), settings, self.tell_every_worker)
        self.services = RequestServices(
            registry=self.registry, settings=settings, run_in_app=run_in_app,
            update_session=self.sessions.update_session,
            pending=self.questions,
            publish=self.events.publish,
            resource_updated=self.resource_updated,
            request_state=SharedCodec(settings, self.fleet.shared_secret),
            use_once=self.fleet.use_once,
            is_used=self.fleet.is_used,
            listeners=self.listeners,
            tasks=self.tasks,
        )
        self.tasks.services = self.services
        # Set by flask_mcp_gevent.web.rate_limit when MCP_RATE_LIMIT is on: charges a batch's messages beyond the first.
        self.charge_batch: Callable[[int], None] | None = None
        self.session_quota = SessionQuota(self.sessions, settings)
        self.call_slots = CallSlots(self.sessions, settings.max_concurrent_calls)
        self.server_info = server_info(settings)
        self.registry.on_change(self.announce_list_changed)
        self.fleet.serve(self)
        self.fleet.share_registry(self.registry)

    # session lifecycle
    def open_session(self, transport: str, principal: str | None = None, address: str | None = None) -> Session:
        """Create and store a new session; CapacityError when the server, the principal or the address holds enough.

        address is the client's (REMOTE_ADDR); it bounds the sessions of clients without a principal.
        """
        session = Session(transport=transport, principal=principal)
        self.session_quota.create(session, address)
        instruments().session_opened(transport)
        return session

    def connect_local(self, session: Session, send: Send) -> None:
        """Hand broadcasts to a session that is not stored (stdio's one client) through send, until disconnected."""
        self.local_sessions[session.id] = (session, send)

    def disconnect_local(self, session_id: str) -> None:
        """Stop handing broadcasts to a local session."""
        self.local_sessions.pop(session_id, None)

    def find_session(self, session_id: str, transport: str, principal: str | None) -> Session | None:
        """The session of this id, transport and principal, its idle timer refreshed; anyone else's is None."""
        return self.sessions.get_own_session(session_id, transport, principal)

    def prepare(self) -> None:
        """Get ready to serve, before the worker accepts its first connection (the fleet's registry changes)."""
        self.fleet.prepare()

    def ready(self) -> bool:
        """Whether the store's backing service answers (/readyz)."""
        return self.fleet.ready()

    def close_session(self, session_id: str) -> bool:
        """End a session and its streams; whether it existed."""
        return self.sessions.close_session(session_id)

    def session_count(self) -> int:
        """How many sessions exist (in this worker, or across the fleet)."""
        return self.sessions.session_count()

    def subscribe(self, session_id: str, last_event_id: str | None = None, *, exclusive: bool = False
                  ) -> Subscription:
        """Attach a stream to a session's events; on a worker already stopping, it ends after what it missed.

        A stream can still arrive after shutdown() (on a connection accepted just before): ended here, its
        client resumes on a worker that stays, instead of holding this one until graceful_timeout cuts it.
        """
        subscription = self.events.subscribe(session_id, last_event_id, exclusive=exclusive)
        if self.stopping_since is not None:
            subscription.end(SHUTTING_DOWN)
        return subscription

    def publish(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Send a message on a stream of the session (None: its own), kept in its replay log; its event id."""
        return self.events.publish(session_id, message, stream)

    def deliver(self, session_id: str, answer: Any, stream: str | None = None) -> str | None:
        """Store an answer the client was promised, counted until stored (the drain waits for it); its event id."""
        with self.calls.storing_answer():
            return self.events.deliver(session_id, answer, stream)

    # the fleet: what this worker does for the others, and asks of them
    def resolve_here(self, session_id: str, response: dict[str, Any]) -> bool:
        """Hand a client's answer to the tool waiting for it in this worker; whether one waited."""
        return self.questions.resolve(session_id, response)

    def cancel_here(self, session_id: str, request_id: Any) -> bool:
        """Stop a request running in this worker; whether one ran."""
        return self.calls.cancel(session_id, request_id)

    def hand_here(self, message: dict[str, Any]) -> None:
        """Give a notification to this worker's listen streams; a failing one is logged, never raised to the sender."""
        try:
            self.listeners.deliver(message)
        except Exception:
            log.exception("handing notification %s to this worker failed", message.get("method"))

    def resolve(self, session_id: str, response: dict[str, Any]) -> bool:
        """Route a client's answer to the tool waiting for it, on whichever worker; whether one may."""
        return self.resolve_here(session_id, response) or self.fleet.resolve_elsewhere(session_id, response)

    def cancel(self, session_id: str, request_id: Any) -> None:
        """Stop a running request on whichever worker runs it."""
        if not self.cancel_here(session_id, request_id):
            self.fleet.cancel_elsewhere(session_id, request_id)

    def tell_every_worker(self, message: dict[str, Any]) -> None:
        """Hand a notification to this worker's listen streams, then to every other worker's."""
        self.hand_here(message)
        self.fleet.tell_others(message)

    def announce_list_changed(self, kind: str) -> None:
        """Tell every session and listen stream that a tool, resource or prompt list changed."""
        notifications.announce(self, notifications.list_changed(kind))

    def resource_updated(self, uri: str) -> None:
        """Tell every session and listen stream subscribed to uri, on every worker, that it changed."""
        notifications.announce(self, notifications.resource_updated(uri))

    # message handling
    def batch_error(self, session: Session, body: Body) -> dict[str, Any] | None:
        """Reject a batch unless the session negotiated the one version that has them."""
        if body.is_batch and not allows_batches(session.protocol_version):
            if session.protocol_version is None:  # nothing negotiated yet: the batch came before initialize
                return error_response(None, INVALID_REQUEST,
                                      "Invalid Request: a batch before initialize; send initialize first, on its own "
                                      "(batches come only with protocol version 2025-03-26)")
            return error_response(
                None,
                INVALID_REQUEST,
                f"Invalid Request: JSON-RPC batches are not part of protocol version {session.protocol_version}; "
                "send one message per request",
            )
        return None

    def accept(self, session: Session, body: Body, send: Send, on_done: Send | None = None,
               caller: Principal | None = None) -> tuple[list[gevent.Greenlet], list[dict[str, Any]]]:
        """Handle notifications and responses now; start each request; return greenlets and immediate errors.

        on_done, when given, receives each request's response in the request's own greenlet. caller is who sent
        the body (its requests may use what its credential grants; None: everything). The transport has checked
        that the session may send a batch (batch_error), since each answers a refused batch its own way.
        """
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
            self.calls.add(session.id, message.id, greenlet)
        greenlet.start()
        return greenlet

    def run_here(self, session: Session, message: Message, caller: Principal | None = None) -> dict[str, Any] | None:
        """Run a request that has no stream in the caller's own greenlet (no spawn, no queue); its response.

        Tracked as in flight like a spawned one, so a shutdown's drain can stop it.
        """
        current = gevent.getcurrent()
        self.calls.add(session.id, message.id, current)
        try:
            return self.handle_request(session, message, discard, caller)
        finally:
            self.calls.discard(session.id, message.id, current)

    def run_request(self, session: Session, message: Message, send: Send, on_done: Send | None,
                    caller: Principal | None) -> dict[str, Any] | None:
        """The body of a request's greenlet: handle it, stop tracking it, hand the response on."""
        # Done here rather than with greenlet links: a link costs the store's loop one more callback per request.
        try:
            response = self.handle_request(session, message, send, caller)
        finally:
            self.calls.discard(session.id, message.id, gevent.getcurrent())
        if on_done is not None and response is not None:
            # Out of the calls in flight: a cancel or the drain's stop would cut the answer (Server.deliver counts
            # it for the drain to wait for).
            on_done(response)
        return response

    def handle_request(self, session: Session, message: Message, send: Send,
                       caller: Principal | None = None) -> dict[str, Any] | None:
        """Dispatch one request through jsonrpcserver, inside the app's context, and return its response."""
        started = time.perf_counter()
        slot = None
        era = era_of(session)
        refusal = era.refusal(session, message)
        if refusal is None and era.takes_call_slot(session, message):
            slot, refusal = self.call_slots.claim(session, message)
        if refusal is not None:
            response: dict[str, Any] | None = refusal
        else:
            ctx = RequestContext(self.services, session, send, message.id, message.method, message.meta,
                                 era=era.name, params=message.params, caller=caller)
            try:
                response = self.services.run_in_app(lambda: jsonrpc_dispatch(era.methods, ctx, message))
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
        if isinstance(response, dict):
            response = era.shape(message, response, self.server_info, caller is not None)
        self.log_call(session, message.method, message.id, response, time.perf_counter() - started)
        return response

    def handle_notification(self, session: Session, message: Message, send: Send) -> None:
        """Act on a client notification; unknown ones are ignored, as JSON-RPC requires."""
        if message.method == "notifications/cancelled":
            request_id = message.params.get("requestId")
            if request_id is not None:
                self.cancel(session.id, request_id)
            return
        if not (message.method or "").startswith("notifications/"):
            # A request method without an id would run unanswered, uncancellable and past the initialize gate.
            log.debug("ignored notification for request method %s in session %s", loggable(message.method),
                      session.id[:8])
            return
        ctx = RequestContext(self.services, session, send, None, message.method, message.meta)
        jsonrpc_dispatch(SESSION.methods, ctx, message)
        if ctx.store_unavailable:
            # Not acknowledged: the POST gets 503, so the client sends the notification again.
            raise StoreUnavailable("session store unreachable")

    def handle_response(self, session: Session, message: Message) -> None:
        """Route a client's answer to the tool that is waiting for it."""
        if not self.resolve(session.id, message.raw):
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
        self.events.shutdown()

    def drain(self) -> int:
        """Let calls in flight finish within half of graceful_timeout, then stop the rest with an error answer.

        Started as soon as the worker is told to stop, while gunicorn still serves its connections: a call
        answered on its POST (JSON, or a request's SSE stream) gets its answer, or the error, on that POST, and
        the worker's connections end before graceful_timeout. A legacy call's answer goes to the session's
        stream, and with the Redis store waits in the replay log for the client to resume on another worker.
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
        if self.events.outlives_worker:
            # Tasks too: those still running at the deadline are failed, so no client polls them for ever.
            self.tasks.drain(deadline - time.monotonic())
        inflight = self.calls
        running = inflight.running()
        # Not joinall: a request run in its POST's own greenlet is over while that greenlet lives on.
        inflight.wait_finished(running, max(0.0, deadline - time.monotonic()))
        stopped = [call for call in running if inflight.holds(*call)]
        for session_id, request_id, greenlet in stopped:
            inflight.stop(session_id, request_id, greenlet, CallStopped)
        # Each answers itself (handle_request).
        inflight.wait_finished(stopped, self.settings.graceful_timeout_s / 4)
        # The waits above end when a call leaves the calls in flight; a legacy call's greenlet then stores its
        # answer (Store.deliver), maybe retrying through a Redis stall: the worker must not exit before it is stored.
        inflight.wait_answers_stored(self.settings.graceful_timeout_s / 4)
        if stopped:
            log.info("stopped %d call(s) still running at shutdown", len(stopped))
        return len(stopped)

"""What every request to the MCP routes passes, whichever way it came in: count, screen, pick a POST's wire, render
a failure, finish.

The count comes first (ConnectionLimit, the outermost WSGI layer): an address with too many requests in progress
gets 429; on a server that is not gevent's it marks each request's thread too (without_gevent.py). Then a method
the endpoint does not serve gets its JSON 405 (MethodGate), on a host app too, before Flask routes it. Then the screen:
foreign origins get 403, and on a loopback listener a Host that is not a loopback name gets 421 (DNS rebinding);
then the bearer token is checked (401 with WWW-Authenticate, 403 for a missing scope, 503 when tokens cannot be
verified). The ops and console pages reuse the Origin and Host checks. A POST then goes to its era's wire
(`handle_post`), from the hot path and from the Flask route alike. A refusal or failure renders as its JSON-RPC
error body (failures.py).

The WSGI hot path (HotPath) answers POSTs to /mcp and /messages straight from WSGI,
without Flask's per-request work: a `tools/call` costs about 100 µs of MCP work,
Flask's contexts, URL matching and hooks around it several times that. It calls the
steps directly; Flask's before_request, error handlers and after_request are
one-line adapters of them (`flask_hooks.install`), so the two ways in answer alike
and cannot drift apart. When a setting needs Flask's own hooks (a rate limit, CORS),
and for every other request, Flask serves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from flask import Flask, Response, request
from werkzeug.exceptions import MethodNotAllowed

from flask_mcp_gevent import eras
from flask_mcp_gevent.auth import Authenticator, Principal
from flask_mcp_gevent.config import Settings, is_loopback_host
from flask_mcp_gevent.errors import INVALID_REQUEST
from flask_mcp_gevent.session import SESSION_HEADER_KEY, session_id_from
from flask_mcp_gevent.stateless.http import legacy_refused, stateless_post
from flask_mcp_gevent.stateless.metadata import PROTOCOL_VERSION_KEY
from flask_mcp_gevent.stream_handoff import HandedOffBody
from flask_mcp_gevent.transports.http_io import (
    HttpProblem,
    log_refusal,
    needs_gevent,
    problem_response,
    read_messages,
)
from flask_mcp_gevent.transports.legacy_sse import legacy_post
from flask_mcp_gevent.transports.streamable_http import streamable_post
from flask_mcp_gevent.web.callers import authenticate, credential_keys, identify
from flask_mcp_gevent.web.failures import render_failure
from flask_mcp_gevent.web.mcp_app import server_of
from flask_mcp_gevent.web.response_headers import SECURITY_HEADERS_WITH_CACHE, origin_allowed
from flask_mcp_gevent.without_gevent import (
    LEGACY_NEEDS_GEVENT,
    SERVED,
    begin_request,
    end_request,
    server_without_gevent,
)

if TYPE_CHECKING:
    from flask_mcp_gevent.server import Server

__all__ = ["HOT_PATHS", "LEGACY_ONLY_PATHS", "ConnectionLimit", "HotPath", "MethodGate", "Pipeline", "ReleasingBody",
           "check_foreign_page",
           "check_host", "check_origin", "emit", "handle_post", "host_allowed"]

log = logging.getLogger("mcp.auth")

# The paths that take legacy messages only (the SDKs' default), as opposed to /mcp, which takes both.
LEGACY_ONLY_PATHS = ("/messages", "/messages/")
HOT_PATHS = frozenset({"/mcp", *LEGACY_ONLY_PATHS})
# What werkzeug's get_wsgi_headers would change: these go its way (1xx, 204, 304, Location, Content-Location).
BODILESS_STATUSES = frozenset({*range(100, 200), 204, 304})
REWRITTEN_HEADERS = frozenset({"location", "content-location"})
RETRY_AFTER_S = "5"


# Origin and Host


def split_host(host: str) -> str:
    """Return the host name of a Host header, without port or IPv6 brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def host_allowed(host: str, allowed: Iterable[str], listener_is_loopback: bool) -> bool:
    """Check the Host header: against MCP_ALLOWED_HOSTS when set, else loopback names on loopback."""
    allowed = tuple(allowed)
    name = split_host(host or "")
    if allowed:
        return "*" in allowed or name in {split_host(a) for a in allowed} or host.strip().lower() in allowed
    if listener_is_loopback:
        return is_loopback_host(name)
    return True


def check_origin(origin: str | None, settings: Settings) -> None:
    """Raise 403 when the request carries an Origin outside MCP_ALLOWED_ORIGINS (and MCP_CORS_ORIGINS)."""
    if origin and not origin_allowed(origin, (*settings.allowed_origins, *settings.cors_origins)):
        raise HttpProblem(
            HTTPStatus.FORBIDDEN,
            INVALID_REQUEST,
            f"Origin {origin!r} is not allowed; add it to MCP_ALLOWED_ORIGINS to let that site connect",
        )


def check_host(environ: Mapping[str, str], settings: Settings) -> None:
    """Raise 421 when the Host header does not name this server (DNS rebinding defence)."""
    host = environ.get("HTTP_HOST", "")
    listener_is_loopback = is_loopback_host(environ.get("SERVER_NAME", ""))
    if not host_allowed(host, settings.allowed_hosts, listener_is_loopback):
        raise HttpProblem(
            HTTPStatus.MISDIRECTED_REQUEST,
            INVALID_REQUEST,
            f"Host {host!r} is not allowed on this listener; set MCP_ALLOWED_HOSTS to the names clients use",
        )


def check_foreign_page(environ: Mapping[str, Any], settings: Settings) -> None:
    """Check Origin (403) and Host (421)."""
    origin = environ.get("HTTP_ORIGIN")
    if origin:
        check_origin(origin, settings)
    check_host(environ, settings)




# a POST's wire
def handle_post(server: Server, environ: Mapping[str, Any], caller: Principal | None,
                legacy_only: bool | None = None) -> Response:
    """Answer a POST: read the body, then serve it on its era's wire.

    legacy_only says whether the path takes legacy messages only (the SDKs' /messages); None reads it from the
    path (the hot path). A legacy message (such a path, or the query names a session) goes to its session whatever
    its body says. Otherwise a 2026-07-28 request (its MCP-Protocol-Version header, or without one its _meta, names
    a version that is not a handshake one) goes to the stateless wire, and the rest is Streamable HTTP.
    """
    # The body first, so that every refusal after it (session, version header) carries the request's id.
    body = read_messages(server, environ)
    # A ?session_id= names a legacy session's stream: the answer goes there, as on /messages, even for a
    # server/discover an auto-mode client sends first (its error on the stream is what makes the client fall back).
    session_id = session_id_from(environ, header=False) if server.settings.session_era else None
    if legacy_only is None:
        legacy_only = environ.get("PATH_INFO") in LEGACY_ONLY_PATHS
    legacy_message = legacy_only or session_id is not None
    first = None if body.is_batch else body.messages[0].raw
    era = eras.choose(environ.get(PROTOCOL_VERSION_KEY), first, names_session=SESSION_HEADER_KEY in environ)
    if not legacy_message and era.stateless:
        if SERVED.without_gevent and not body.is_batch and body.messages[0].method == "subscriptions/listen":
            raise needs_gevent(HTTPStatus.NOT_IMPLEMENTED, body.request_id)
        return stateless_post(server, environ, caller, body)
    if not server.settings.session_era:
        return legacy_refused(environ, body)
    if legacy_message:
        if SERVED.without_gevent:
            raise needs_gevent(HTTPStatus.NOT_IMPLEMENTED, body.request_id, message=LEGACY_NEEDS_GEVENT)
        return legacy_post(server, session_id, caller, body)
    return streamable_post(server, environ, caller, body)


# the pipeline
class Pipeline:
    """The screen, the failure rendering and the finish of one app's MCP requests."""

    def __init__(self, settings: Settings, authenticator: Authenticator | None) -> None:
        self.settings = settings
        self.authenticator = authenticator
        # A host's principal_loader (flask_mcp_gevent/extension.py): who the caller is, beside the bearer check.
        # It reads Flask's request, which the WSGI hot path does not build: with one, Flask serves every request.
        self.loader: Callable[[Any], Any] | None = None
        # The headers a loader's caller passes on to the host's routes (web/callers.credential_keys).
        self.forwarded = credential_keys(())

    @property
    def needs_flask_request(self) -> bool:
        """Whether the screen reads Flask's request (a principal_loader), so Flask must serve every request."""
        return self.loader is not None

    def screen(self, environ: Mapping[str, Any]) -> Principal | None:
        """Check Origin, Host and credentials (403, 421, 401, 503); return the caller (None: auth off)."""
        check_foreign_page(environ, self.settings)
        if environ.get("REQUEST_METHOD") == "OPTIONS":
            return None  # a CORS preflight never carries credentials; it only asks which headers it may send
        if self.loader is None:
            return authenticate(self.authenticator, self.settings, environ)
        return identify(self.loader, request._get_current_object(),  # type: ignore[attr-defined]
                        self.settings, self.authenticator, self.forwarded)

    # A refusal or failure as its JSON-RPC error body (failures.py).
    render_failure = staticmethod(render_failure)

    @staticmethod
    def finish(environ: Mapping[str, Any], response: Response) -> Response:
        """Put the security headers on the response and log it on one line if it is a refusal."""
        add_security_headers(response)
        log_refusal(environ, response.status_code)
        return response


def add_security_headers(response: Response) -> Response:
    """Put the security headers on the response, and forbid caching unless the route said otherwise."""
    present = {name.lower() for name in response.headers.keys()}
    # Appended to werkzeug's own list: Headers.extend would check each of these constants for line breaks.
    response.headers._list.extend([(name, value) for name, value in SECURITY_HEADERS_WITH_CACHE
                                   if name.lower() not in present])
    return response


# the hot path
class HotPath:
    """WSGI middleware in front of Flask's wsgi_app for POSTs to the MCP endpoints."""

    def __init__(self, app: Flask, pipeline: Pipeline, flask_wsgi: Callable[..., Iterable[bytes]],
                 start: Callable[[], None]) -> None:
        self.flask_wsgi = flask_wsgi
        self.pipeline = pipeline
        # The extension's once-only start (flask_hooks.start_extension), which Flask runs for the requests it serves.
        self.start = start
        self.started = False
        self.server = server_of(app)
        settings = self.server.settings
        # flask-limiter and the CORS headers are Flask hooks: with either configured, Flask serves every request.
        self.enabled = not settings.rate_limit and not settings.cors_origins

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Answer a hot POST here; hand anything else to Flask."""
        if (not self.enabled or environ.get("REQUEST_METHOD") != "POST" or environ.get("PATH_INFO") not in HOT_PATHS
                or self.pipeline.needs_flask_request):
            return self.flask_wsgi(environ, start_response)
        if not self.started:
            self.started = True
            self.start()
        response = self.pipeline.finish(environ, self.answer(environ))
        return emit(response, environ, start_response)

    def answer(self, environ: Mapping[str, Any]) -> Response:
        """The response to one POST; refusals and failures become their JSON-RPC error bodies."""
        try:
            caller = self.pipeline.screen(environ)
            return handle_post(self.server, environ, caller)
        except Exception as exc:
            return self.pipeline.render_failure(exc, environ)


def emit(response: Response, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Start a response; a buffered body with its length set goes out as it is, without werkzeug's fixes.

    werkzeug copies the headers and looks for Location, Content-Length and statuses without a body on
    every response; the JSON answers of a POST need none of that, and they are most of the traffic.
    """
    body = response.response
    if type(body) is list and not response._on_close and response.status_code not in BODILESS_STATUSES:
        headers = response.headers.to_wsgi_list()
        names = {name.lower() for name, _ in headers}
        if "content-length" in names and not names & REWRITTEN_HEADERS:
            start_response(response.status, headers)
            return body
    return response(environ, start_response)


# the methods each MCP endpoint serves
# The order an Allow header names methods in.
METHOD_ORDER = ("GET", "POST", "DELETE", "OPTIONS")


class MethodGate:
    """WSGI middleware: a method an MCP endpoint does not serve gets MCP's JSON 405, and an OPTIONS the true Allow.

    Flask routes a wrong method before any blueprint's handler runs, so on a host app a `PUT /mcp` would get the
    host's HTML 405 page; and werkzeug lists HEAD in Allow for every GET route, where MCP's endpoints refuse HEAD
    (a HEAD must neither open a stream nobody reads nor end a session).
    """

    def __init__(self, wsgi: Callable[..., Iterable[bytes]], served: Mapping[str, frozenset[str]]) -> None:
        self.wsgi = wsgi
        # The methods of each MCP endpoint's path, HEAD never among them, in the order Allow names them.
        self.served = {path: tuple(sorted(methods, key=method_rank)) for path, methods in served.items()}

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Refuse a method the path does not serve; name the served ones in an OPTIONS answer's Allow."""
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "")
        served = self.served.get(path)
        if served is None:
            return self.wsgi(environ, start_response)
        if method not in served:
            refusal = MethodNotAllowed(valid_methods=list(served))
            return Pipeline.finish(environ, render_failure(refusal, environ))(environ, start_response)
        if method != "OPTIONS":
            return self.wsgi(environ, start_response)
        allow = ", ".join(served)

        def start_with_allow(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            """Start the response with this path's own Allow in place of Flask's."""
            headers = [(name, allow if name.lower() == "allow" else value) for name, value in headers]
            return start_response(status, headers, exc_info)

        return self.wsgi(environ, start_with_allow)


def method_rank(method: str) -> tuple[int, str]:
    """Where a method goes in an Allow header: the MCP ones in METHOD_ORDER, any other after them."""
    return (METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER), method)


def served_methods(app: Flask, blueprint: str) -> dict[str, frozenset[str]]:
    """The methods each path of blueprint serves on app, without the HEAD werkzeug adds to every GET route."""
    served: dict[str, frozenset[str]] = {}
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith(f"{blueprint}."):
            served[rule.rule] = served.get(rule.rule, frozenset()) | frozenset((rule.methods or set()) - {"HEAD"})
    return served


# the count of requests in progress per address
def is_under(path: str, prefix: str) -> bool:
    """Whether path is prefix or one of its sub-paths."""
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


class ConnectionLimit:
    """WSGI middleware in front of the app: counts each address's requests in progress, refuses the excess."""

    def __init__(self, wsgi: Callable[..., Iterable[bytes]], limit: int, paths_under: str | None = None) -> None:
        self.wsgi = wsgi
        self.limit = limit
        # On a host app, only the MCP paths count (paths_under is its MCP path); the host's own routes pass.
        self.paths_under = paths_under
        # Only addresses with a request in progress are here, so the table is as large as the worker's load.
        self.in_progress: dict[str, int] = {}
        # What serves the app, asked of its first request: None for gevent (or Flask's test client), else a server
        # that is not gevent's, whose requests' threads are marked until each request ends (without_gevent.py).
        self.without_gevent: str | None = None
        self.asked = False

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Serve the request if its address is under the bound, else answer 429 without reading the body."""
        if self.paths_under is not None and not is_under(environ.get("PATH_INFO", ""), self.paths_under):
            return self.wsgi(environ, start_response)
        address = environ.get("REMOTE_ADDR") or ""
        count = self.in_progress.get(address, 0)
        if count >= self.limit:
            return self.refuse(environ, start_response)
        # gevent never switches between the check and the increment, so no lock is needed.
        self.in_progress[address] = count + 1
        if not self.asked:
            self.without_gevent, self.asked = server_without_gevent(environ), True
        if self.without_gevent is not None:
            begin_request(self.without_gevent)
        try:
            body = self.wsgi(environ, start_response)
        except BaseException:
            self.release(address)
            if self.without_gevent is not None:
                end_request()
            raise
        # The server closes the body when the response ends, however it ends (a client gone included).
        return ReleasingBody(body, self, address)

    def release(self, address: str) -> None:
        """One request of address is over."""
        count = self.in_progress.get(address, 0) - 1
        if count > 0:
            self.in_progress[address] = count
        else:
            self.in_progress.pop(address, None)

    def refuse(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """The 429 for an address over the bound, with a JSON-RPC error body and the security headers."""
        response = problem_response(HttpProblem(
            HTTPStatus.TOO_MANY_REQUESTS, INVALID_REQUEST,
            f"Too many requests in progress from your address: the limit is {self.limit} at once "
            "(MCP_MAX_CONNECTIONS_PER_ADDRESS); finish or close one, then retry",
            headers={"Retry-After": RETRY_AFTER_S},
        ))
        return Pipeline.finish(environ, response)(environ, start_response)


class ReleasingBody:
    """The app's response body for the server to iterate as is; closing it releases its address's count."""

    # Held for a stream's whole life: no werkzeug ClosingIterator (a Python __next__ between the server's write loop
    # and the stream, deepening every idle greenlet's saved stack), no partial, no per-instance dict.
    __slots__ = ("address", "body", "limit")

    def __init__(self, body: Iterable[bytes], limit: ConnectionLimit, address: str) -> None:
        self.body = body
        self.limit = limit
        self.address = address

    def __iter__(self) -> Iterator[bytes]:
        """The app's own iterator."""
        return iter(self.body)

    def close(self) -> None:
        """Close the app's body (as WSGI asks), then count the request as over, even if that close failed.

        An event stream the server took over (stream_handoff.py) goes on after its request: it is over, and counted
        so, when its writer ends it.
        """
        if isinstance(self.body, HandedOffBody) and self.body.handed_off:
            self.body.ends.append(self.release_address)
            return
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            self.release_address()
            if self.limit.without_gevent is not None:
                end_request()

    def release_address(self) -> None:
        """Count this request of its address as over."""
        self.limit.release(self.address)

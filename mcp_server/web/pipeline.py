"""What every request to the MCP routes passes, whichever way it came in: screen, render a failure, finish.

The screen comes first: foreign origins get 403, and on a loopback listener a Host
that is not a loopback name gets 421 (DNS rebinding); then the bearer token is
checked (401 with WWW-Authenticate, 403 for a missing scope, 503 when tokens cannot
be verified). The ops and console pages reuse the Origin and Host checks.

The WSGI hot path (HotPath) answers POSTs to /mcp and /messages straight from WSGI,
without Flask's per-request work: a `tools/call` costs about 100 µs of MCP work,
Flask's contexts, URL matching and hooks around it several times that. It calls the
three steps directly; Flask's before_request, error handlers and after_request are
one-line adapters of them (`install`), so the two ways in answer alike and cannot
drift apart. When a setting needs Flask's own hooks (a rate limit, CORS), and for
every other request, Flask serves. tests/unit/test_pipeline_hooks.py fails when a
Flask hook appears that this module does not know.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any

from flask import Flask, Response, current_app, g, request
from werkzeug.exceptions import HTTPException

from mcp_server.auth import Authenticator, AuthUnavailable, InsufficientScope, Unauthenticated, metadata_url
from mcp_server.config import Settings, is_loopback_host
from mcp_server.errors import INVALID_REQUEST, PERMISSION_DENIED, SERVER_UNAVAILABLE, error_response, new_correlation_id
from mcp_server.hub import HubUnavailable
from mcp_server.transports.http_io import (
    HttpProblem,
    json_response,
    log_refusal,
    problem_response,
    store_unavailable,
    unexpected_error_response,
)
from mcp_server.web.mcp_app import MCP_BLUEPRINT, dispatcher_of, handle_error_in
from mcp_server.web.response_headers import SECURITY_HEADERS_WITH_CACHE, origin_allowed
from mcp_server.web.routes import LEGACY_ONLY_PATHS, handle_post
from mcp_server.web.security import AUTH_EXTENSION_KEY

__all__ = ["FAILURES", "FLASK_ONLY_HOOKS", "HOT_PATHS", "HotPath", "Pipeline", "check_foreign_page", "check_host",
           "check_origin", "emit", "host_allowed", "install", "installed_hooks", "screen_environ"]

log = logging.getLogger("mcp.auth")

# The exceptions render_failure turns into answers, most specific first (Flask gets one handler for each).
FAILURES = (HttpProblem, HubUnavailable, HTTPException, Exception)
# Hooks that only a rate limit or CORS installs: with either set, HotPath hands every request to Flask.
FLASK_ONLY_HOOKS = frozenset({
    "before_request:flask_limiter._extension.Limiter._check_request_limit",
    "after_request:flask_limiter._extension.Limiter.__inject_headers",
    "after_request:mcp_server.web.response_headers.add_cors_headers",
    "teardown_request:flask_limiter._extension.Limiter.__release_context",
    "error:RateLimitExceeded:mcp_server.web.rate_limit.render_rate_limited",
})
HTTP_EXCEPTION_HINTS: dict[int, str] = {
    HTTPStatus.NOT_FOUND: "Not found: the MCP endpoint is /mcp (or /sse and /messages)",
    HTTPStatus.METHOD_NOT_ALLOWED: "Method {method} is not allowed here; /mcp takes GET, POST and DELETE",
}

HOT_PATHS = frozenset({"/mcp", *LEGACY_ONLY_PATHS})
# What werkzeug's get_wsgi_headers would change: these go its way (1xx, 204, 304, Location, Content-Location).
BODILESS_STATUSES = frozenset({*range(100, 200), 204, 304})
REWRITTEN_HEADERS = frozenset({"location", "content-location"})



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


# authentication
def challenge(settings: Settings, error: str | None = None, description: str = "", scope: str = "") -> str:
    """The WWW-Authenticate value: RFC 6750 Bearer, naming the resource metadata when OAuth is on."""
    params = []
    if settings.oauth_jwks_url:
        params.append(f'resource_metadata="{metadata_url(settings.oauth_audience)}"')
    else:
        params.append('realm="mcp"')
    # RFC 6750: a request that sent no credentials at all gets the bare challenge, without error details.
    if error:
        params.append(f'error="{error}"')
        if description:
            params.append('error_description="{}"'.format(description.replace('"', "'").replace("\\", "")))
    if scope:
        params.append(f'scope="{scope}"')
    return "Bearer " + ", ".join(params)


def authenticate(authenticator: Authenticator | None, settings: Settings, environ: Mapping[str, Any]) -> str | None:
    """Return the principal behind the request's bearer token (None when auth is off); 401/403/503 otherwise."""
    # A CORS preflight never carries credentials; it only asks which headers it may send.
    if authenticator is None or environ.get("REQUEST_METHOD") == "OPTIONS":
        return None
    try:
        return authenticator.authenticate(environ.get("HTTP_AUTHORIZATION")).name
    except Unauthenticated as refused:
        message = f"Unauthorized: {refused}"
        query = environ.get("QUERY_STRING", "")
        if refused.error is None and any(f"{name}=" in query for name in ("access_token", "token", "api_key")):
            message += " (credentials in the URL are ignored: they end up in logs)"
        raise HttpProblem(HTTPStatus.UNAUTHORIZED, INVALID_REQUEST, message,
                          headers={"WWW-Authenticate": challenge(settings, refused.error, str(refused))}) from None
    except InsufficientScope as refused:
        scope = " ".join(refused.scopes)
        raise HttpProblem(
            HTTPStatus.FORBIDDEN, PERMISSION_DENIED,
            f"Forbidden: {refused}; ask the authorization server for a token with scope '{scope}'",
            headers={"WWW-Authenticate": challenge(settings, "insufficient_scope", str(refused), scope)},
        ) from None
    except AuthUnavailable as unavailable:
        correlation_id = new_correlation_id()
        log.error("cannot verify tokens: %s (correlation id %s)", unavailable, correlation_id)
        raise HttpProblem(HTTPStatus.SERVICE_UNAVAILABLE, SERVER_UNAVAILABLE,
                          "Cannot verify tokens right now; retry shortly",
                          data={"correlationId": correlation_id}, headers={"Retry-After": "5"}) from None


def check_foreign_page(environ: Mapping[str, Any], settings: Settings) -> None:
    """Check Origin (403) and Host (421)."""
    origin = environ.get("HTTP_ORIGIN")
    if origin:
        check_origin(origin, settings)
    check_host(environ, settings)


def screen_environ(environ: Mapping[str, Any], settings: Settings, authenticator: Authenticator | None) -> str | None:
    """Check Origin, Host and credentials; return the principal's name (None: auth off)."""
    check_foreign_page(environ, settings)
    return authenticate(authenticator, settings, environ)


# the pipeline
class Pipeline:
    """The screen, the failure rendering and the finish of one app's MCP requests."""

    def __init__(self, app: Flask, identify: Callable[[Mapping[str, Any]], str | None] | None = None) -> None:
        self.app = app
        self.settings = dispatcher_of(app).settings
        # Who the caller is, in place of the bearer check: the extension's (mcp_server/extension.py), which asks
        # a host's principal_loader. None: the bearer check (API keys, OAuth) decides.
        self.identify = identify
        # Set when identify reads Flask's request (a principal_loader): then Flask serves every request, hot or not.
        self.needs_flask_request = False

    def screen(self, environ: Mapping[str, Any]) -> str | None:
        """Check Origin, Host and credentials (403, 421, 401, 503); return the principal (None: auth off)."""
        if self.identify is None:
            return screen_environ(environ, self.settings, self.app.extensions.get(AUTH_EXTENSION_KEY))
        check_foreign_page(environ, self.settings)
        return self.identify(environ)

    @staticmethod
    def render_failure(exc: Exception, environ: Mapping[str, Any]) -> Response:
        """A refusal or failure as its JSON-RPC error body: never HTML, a traceback or internal detail."""
        if isinstance(exc, HttpProblem):
            return problem_response(exc)
        if isinstance(exc, HubUnavailable):
            # Redis is unreachable: 503 at once on every path (open, resume, post, delete), never 500.
            return problem_response(store_unavailable())
        if isinstance(exc, HTTPException):
            return http_exception_response(exc, environ)
        return unexpected_error_response(environ)

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


def http_exception_response(exc: HTTPException, environ: Mapping[str, Any]) -> Response:
    """Werkzeug's errors (404, 405, ...) as JSON instead of HTML."""
    status = exc.code or HTTPStatus.INTERNAL_SERVER_ERROR
    hint = HTTP_EXCEPTION_HINTS.get(status)
    message = hint.format(method=environ.get("REQUEST_METHOD")) if hint else exc.name
    response = json_response(error_response(None, INVALID_REQUEST, message), status)
    if status == HTTPStatus.METHOD_NOT_ALLOWED:
        response.headers.update({name: value for name, value in exc.get_headers() if name.lower() == "allow"})
    return response


def install(app: Flask, pipeline: Pipeline, scope: tuple[str, ...] | None = None) -> None:
    """Make Flask's before_request, error handlers and after_request adapters of the pipeline.

    scope names the blueprints whose requests the pipeline finishes and whose failures it renders; None means
    every request of the app (the template's app, which is all MCP). A host app keeps its own pages and headers.
    """
    app.before_request(screen_mcp_request)
    if scope is None:
        for failure in FAILURES:
            app.register_error_handler(failure, render_failure)
        app.after_request(finish)
    else:
        for blueprint in scope:
            for failure in FAILURES:
                handle_error_in(app, blueprint, failure, render_failure)
            app.after_request_funcs.setdefault(blueprint, []).append(finish)
    app.extensions["mcp_pipeline"] = pipeline



def pipeline_of(app: Any) -> Pipeline:
    """The pipeline installed on app."""
    return app.extensions["mcp_pipeline"]


def screen_mcp_request() -> None:
    """Screen requests to the MCP routes (before the rate limiter counts them, so it counts per principal)."""
    if request.blueprint == MCP_BLUEPRINT:
        g.principal = pipeline_of(current_app).screen(request.environ)


def render_failure(exc: Exception) -> Response:
    """Flask's error handler: the pipeline's rendering."""
    return Pipeline.render_failure(exc, request.environ)


def finish(response: Response) -> Response:
    """Flask's after_request: the pipeline's finish."""
    return Pipeline.finish(request.environ, response)


def installed_hooks(app: Flask, blueprints: tuple[str | None, ...] = (None, MCP_BLUEPRINT)) -> set[str]:
    """Name every Flask hook that runs for the MCP routes (app-wide or the MCP blueprint's), one string each."""
    hooks: set[str] = set()
    for kind, table in (("before_request", app.before_request_funcs), ("after_request", app.after_request_funcs),
                        ("teardown_request", app.teardown_request_funcs)):
        for blueprint in blueprints:
            hooks.update(f"{kind}:{qualified_name(hook)}" for hook in table.get(blueprint, ()))
    for blueprint in blueprints:
        for handlers in app.error_handler_spec.get(blueprint, {}).values():
            hooks.update(f"error:{cls.__name__}:{qualified_name(hook)}" for cls, hook in handlers.items())
    return hooks


def pipeline_hooks() -> set[str]:
    """The hooks install() puts on an app: the ones HotPath mirrors."""
    return ({f"before_request:{qualified_name(screen_mcp_request)}", f"after_request:{qualified_name(finish)}"}
            | {f"error:{cls.__name__}:{qualified_name(render_failure)}" for cls in FAILURES})


def qualified_name(hook: Any) -> str:
    """module.qualname of a hook, looking through functools.partial and bound methods."""
    hook = getattr(hook, "func", hook)
    hook = getattr(hook, "__func__", hook)
    return f"{hook.__module__}.{hook.__qualname__}"


# the hot path
class HotPath:
    """WSGI middleware in front of Flask's wsgi_app for POSTs to the MCP endpoints."""

    def __init__(self, app: Flask, pipeline: Pipeline, flask_wsgi: Callable[..., Iterable[bytes]]) -> None:
        self.flask_wsgi = flask_wsgi
        self.pipeline = pipeline
        self.dispatcher = dispatcher_of(app)
        settings = self.dispatcher.settings
        # flask-limiter and the CORS headers are Flask hooks: with either configured, Flask serves every request.
        self.enabled = not settings.rate_limit and not settings.cors_origins

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """Answer a hot POST here; hand anything else to Flask."""
        if (not self.enabled or environ.get("REQUEST_METHOD") != "POST" or environ.get("PATH_INFO") not in HOT_PATHS
                or self.pipeline.needs_flask_request):
            return self.flask_wsgi(environ, start_response)
        response = self.pipeline.finish(environ, self.answer(environ))
        return emit(response, environ, start_response)

    def answer(self, environ: Mapping[str, Any]) -> Response:
        """The response to one POST; refusals and failures become their JSON-RPC error bodies."""
        try:
            principal = self.pipeline.screen(environ)
            return handle_post(self.dispatcher, environ, principal)
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

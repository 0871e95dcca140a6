"""What every request to the MCP routes passes, whichever way it came in: screen, render a failure, finish.

The WSGI hot path calls these three directly; Flask's before_request, error
handlers and after_request are one-line adapters of them (`install`), so the two
ways in cannot drift apart. tests/unit/test_pipeline_hooks.py fails when a Flask
hook appears that this module does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

from flask import Flask, Response, current_app, g, request
from werkzeug.exceptions import HTTPException

from mcp_server.errors import INVALID_REQUEST, error_response
from mcp_server.hub import HubUnavailable
from mcp_server.transports.http_io import store_unavailable
from mcp_server.transports.http_responses import (
    HttpProblem,
    json_response,
    log_refusal,
    problem_response,
    unexpected_error_response,
)
from mcp_server.web.mcp_app import MCP_BLUEPRINT, core_of
from mcp_server.web.response_headers import add_security_headers
from mcp_server.web.screen import screen_environ
from mcp_server.web.security import AUTH_EXTENSION_KEY

__all__ = ["FAILURES", "FLASK_ONLY_HOOKS", "Pipeline", "install", "installed_hooks"]

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


class Pipeline:
    """The screen, the failure rendering and the finish of one app's MCP requests."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.settings = core_of(app).settings

    def screen(self, environ: Mapping[str, Any]) -> str | None:
        """Check Origin, Host and credentials (403, 421, 401, 503); return the principal (None: auth off)."""
        return screen_environ(environ, self.settings, self.app.extensions.get(AUTH_EXTENSION_KEY))

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


def http_exception_response(exc: HTTPException, environ: Mapping[str, Any]) -> Response:
    """Werkzeug's errors (404, 405, ...) as JSON instead of HTML."""
    status = exc.code or HTTPStatus.INTERNAL_SERVER_ERROR
    hint = HTTP_EXCEPTION_HINTS.get(status)
    message = hint.format(method=environ.get("REQUEST_METHOD")) if hint else exc.name
    response = json_response(error_response(None, INVALID_REQUEST, message), status)
    if status == HTTPStatus.METHOD_NOT_ALLOWED:
        response.headers.update({name: value for name, value in exc.get_headers() if name.lower() == "allow"})
    return response


def install(app: Flask, pipeline: Pipeline) -> None:
    """Make Flask's before_request, error handlers and after_request adapters of the pipeline."""
    app.before_request(screen_mcp_request)
    for failure in FAILURES:
        app.register_error_handler(failure, render_failure)
    app.after_request(finish)
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

"""Flask's hooks on the MCP routes as one-line adapters of the pipeline, so both ways in answer alike.

The WSGI hot path calls the pipeline's steps directly; Flask serves every other request (and every request when a
rate limit or CORS is on) through the before_request, error handlers and after_request installed here.
tests/unit/test_pipeline_hooks.py fails when a Flask hook appears that this module does not know.
"""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, current_app, g, request

from flask_mcp_gevent.web.failures import FAILURES
from flask_mcp_gevent.web.mcp_app import MCP_BLUEPRINT, MCP_EXTENSION, handle_error_in
from flask_mcp_gevent.web.pipeline import Pipeline

__all__ = ["FLASK_ONLY_HOOKS", "install", "installed_hooks", "pipeline_hooks", "pipeline_of"]

# Hooks that only a rate limit or CORS installs: with either set, HotPath hands every request to Flask.
FLASK_ONLY_HOOKS = frozenset({
    "before_request:flask_limiter._extension.Limiter._check_request_limit",
    "after_request:flask_limiter._extension.Limiter.__inject_headers",
    "after_request:flask_mcp_gevent.web.response_headers.add_cors_headers",
    "teardown_request:flask_limiter._extension.Limiter.__release_context",
    "error:RateLimitExceeded:flask_mcp_gevent.web.rate_limit.render_rate_limited",
})


def install(app: Flask, scope: tuple[str, ...] | None = None) -> None:
    """Make Flask's before_request, error handlers and after_request adapters of the pipeline.

    scope names the blueprints whose requests the pipeline finishes and whose failures it renders; None means
    every request of the app (the template's app, which is all MCP). A host app keeps its own pages and headers.
    """
    # First of every request's hooks: by the first request the app is set up (a CSRFProtect made after MCP too).
    app.before_request_funcs.setdefault(None, []).insert(0, start_extension)
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


def pipeline_of(app: Any) -> Pipeline:
    """The pipeline of app's MCP extension."""
    return app.extensions[MCP_EXTENSION].pipeline


def start_extension() -> None:
    """Run the extension's once-only start (McpExtension.start) at the app's first request."""
    current_app.extensions[MCP_EXTENSION].start()


def screen_mcp_request() -> None:
    """Screen requests to the MCP routes (before the rate limiter counts them, so it counts per principal)."""
    if request.blueprint == MCP_BLUEPRINT:
        g.mcp_caller = pipeline_of(current_app).screen(request.environ)


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
    return ({f"before_request:{qualified_name(start_extension)}",
             f"before_request:{qualified_name(screen_mcp_request)}", f"after_request:{qualified_name(finish)}"}
            | {f"error:{cls.__name__}:{qualified_name(render_failure)}" for cls in FAILURES})


def qualified_name(hook: Any) -> str:
    """module.qualname of a hook, looking through functools.partial and bound methods."""
    hook = getattr(hook, "func", hook)
    hook = getattr(hook, "__func__", hook)
    return f"{hook.__module__}.{hook.__qualname__}"



"""Run MCP's handlers inside the Flask app's application context, as Flask runs a view inside it.

Each request's handler (and so the tool, resource, prompt or completer it calls) gets a fresh application context
of the app that serves it: `current_app`, its config and extensions work, `g` is new for every call, and the app's
`teardown_appcontext` functions run when the call ends. It runs in a context of its own (contextvars), so no call
sees another's `g`, nor the Flask request of the MCP POST it came in on: a call is the same on every wire, whether
it runs in its POST's greenlet, in a greenlet of its own, in a task or on stdio.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from flask import Flask

__all__ = ["app_runner"]


def app_runner(app: Flask) -> Callable[[Callable[[], Any]], Any]:
    """A function that runs work inside a new application context of app, in an empty contextvars context."""

    def run_in_app(work: Callable[[], Any]) -> Any:
        """Push a fresh app context, run work, pop it (running the app's teardown_appcontext functions)."""

        def inside() -> Any:
            with app.app_context():
                return work()

        return contextvars.Context().run(inside)

    return run_in_app

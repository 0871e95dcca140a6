"""Requests in progress per client address, at most MCP_MAX_CONNECTIONS_PER_ADDRESS in one worker.

A request counts from when its headers have arrived until its response ends (a stream counts for its whole
life), which is what a connection trickling its body, or holding a stream, costs the worker. Past the bound
an address gets 429 at once, so a few clients cannot take a worker's connections from everyone else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from http import HTTPStatus
from typing import Any

from mcp_server.errors import INVALID_REQUEST
from mcp_server.transports.http_io import HttpProblem, problem_response
from mcp_server.web.pipeline import Pipeline

__all__ = ["ConnectionLimit", "ReleasingBody"]

RETRY_AFTER_S = "5"


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
        try:
            body = self.wsgi(environ, start_response)
        except BaseException:
            self.release(address)
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
        """Close the app's body (as WSGI asks), then count the request as over, even if that close failed."""
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            self.limit.release(self.address)

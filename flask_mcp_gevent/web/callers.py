"""Who an MCP caller is on a host app: its principal_loader's answer, and the credentials its requests carried.

The loader reads the host's own login (a session cookie, a token, a header) from the Flask request and
answers None (401, as an unknown API key gets) or an entry shaped like an API-keys entry, checked alike:
`{"principal": "alice", "tools": ["*"], "resources": [...], "prompts": [...]}`. A session stores only its
principal's name, so the grants are remembered per name, as for an OAuth token (auth/permissions.py).
A route made a tool (web/route_tools.py) calls the host as the caller: it sends the credentials the
principal's latest MCP request carried, which this worker remembers per principal; an anonymous caller's
(auth off) are never kept, since two anonymous callers cannot be told apart.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any

from flask_mcp_gevent.auth.api_keys import principal_of_entry
from flask_mcp_gevent.auth.permissions import Authorizer
from flask_mcp_gevent.auth.principal import Principal
from flask_mcp_gevent.config import ConfigError, Settings
from flask_mcp_gevent.encoding import utf8_size
from flask_mcp_gevent.errors import INVALID_REQUEST
from flask_mcp_gevent.transports.http_io import HttpProblem
from flask_mcp_gevent.web.oauth_metadata import challenge

__all__ = ["LOADER", "CallerCredentials", "load_principal"]

log = logging.getLogger("mcp.auth")

# Principal.via for a principal the host's loader named.
LOADER = "principal-loader"
# The request headers that carry a caller's credentials to the host's routes, by their WSGI environ keys.
CREDENTIAL_HEADERS = {"HTTP_AUTHORIZATION": "Authorization", "HTTP_COOKIE": "Cookie"}
UNKNOWN_CALLER = "Unauthorized: this app does not know who you are; sign in as the app expects"


def load_principal(loader: Callable[[Any], Any], request: Any, settings: Settings, authorizer: Authorizer) -> str:
    """Ask the host's loader who sent request; remember the principal's grants and return its name (401 if none)."""
    entry = loader(request)
    if entry is None:
        raise HttpProblem(HTTPStatus.UNAUTHORIZED, INVALID_REQUEST, UNKNOWN_CALLER,
                          headers={"WWW-Authenticate": challenge(settings)})
    try:
        principal: Principal = principal_of_entry(entry, "the principal_loader's answer", LOADER)
    except ConfigError as problem:
        # The host's code is wrong, not the caller: a 500, with the reason in the log only.
        log.error("%s", problem)
        raise RuntimeError(str(problem)) from None
    authorizer.remember(principal.name, principal.grants)
    return principal.name


class CallerCredentials:
    """The credential headers each principal's latest MCP request carried, bounded in number and in bytes."""

    def __init__(self, limit: int, max_bytes: int) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        self.latest: OrderedDict[str, dict[str, str]] = OrderedDict()
        self.held_bytes = 0

    def remember(self, principal: str | None, environ: Mapping[str, Any]) -> None:
        """Keep the credentials of one request of principal (none kept for an anonymous one, nor one over the bound)."""
        if principal is None:
            return
        self.forget(principal)
        headers = {name: environ[key] for key, name in CREDENTIAL_HEADERS.items() if key in environ}
        size = size_of(principal, headers)
        if size > self.max_bytes:
            return  # its route calls go without credentials, as an anonymous caller's do
        self.latest[principal] = headers
        self.held_bytes += size
        while len(self.latest) > self.limit or self.held_bytes > self.max_bytes:
            self.forget(next(iter(self.latest)))

    def forget(self, principal: str) -> None:
        """Drop what is kept for principal, if anything."""
        headers = self.latest.pop(principal, None)
        if headers is not None:
            self.held_bytes -= size_of(principal, headers)

    def headers_of(self, principal: str | None) -> dict[str, str]:
        """The headers to send the host as principal: its latest credentials, or none."""
        return dict(self.latest.get(principal, {})) if principal is not None else {}


def size_of(principal: str, headers: Mapping[str, str]) -> int:
    """The bytes one principal's entry counts for: its name and its headers' names and values."""
    return utf8_size(principal) + sum(len(name) + len(value) for name, value in headers.items())

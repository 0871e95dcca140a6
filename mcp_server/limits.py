"""Limits that keep one client from exhausting the server: body shape, sessions, concurrent calls.

Everything here is Flask-free, so every transport can use it. The rate limit per
principal lives in `rate_limit` (it needs flask-limiter); the body size limit in
`posts.read_body`, before anything is parsed.
"""

from __future__ import annotations

import logging
from typing import Any

from mcp_server.encoding import dumps
from mcp_server.errors import INVALID_REQUEST
from mcp_server.hub import CapacityError
from mcp_server.messages import REQUEST, Body

__all__ = [
    "BodyLimitExceeded",
    "CallSlots",
    "SessionQuota",
    "SessionQuotaExceeded",
    "check_body",
    "json_depth_and_longest_string",
]

log = logging.getLogger("mcp.limits")

HTTP_400_BAD_REQUEST = 400
HTTP_413_PAYLOAD_TOO_LARGE = 413


class BodyLimitExceeded(ValueError):
    """A parsed body breaks a shape limit; carries the HTTP status and the JSON-RPC code to answer with."""

    def __init__(self, status: int, message: str, code: int = INVALID_REQUEST) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


def json_depth_and_longest_string(value: Any, max_depth: int) -> tuple[int, int]:
    """Walk decoded JSON without recursion; return (depth, longest string in UTF-8 bytes), stopping past max_depth."""
    deepest = 0
    longest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            # A character is 1 to 4 bytes: encode only when the length alone cannot decide.
            longest = max(longest, len(item) if item.isascii() else len(item.encode("utf-8", "surrogatepass")))
            continue
        if isinstance(item, dict):
            children: Any = [*item.keys(), *item.values()]
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > max_depth:
            return deepest, longest
        stack.extend((child, depth + 1) for child in children)
    return deepest, longest


def check_body(body: Body, data: bytes, settings: Any) -> None:
    """Raise BodyLimitExceeded when a body is nested too deep, has a too-long string, batch or arguments."""
    if body.is_batch and len(body.messages) > settings.max_batch:
        raise BodyLimitExceeded(
            HTTP_400_BAD_REQUEST,
            f"Batch too long: {len(body.messages)} messages, the limit is {settings.max_batch} (MCP_MAX_BATCH)",
        )
    # Cheap byte counts first: a body with few brackets cannot be deep, a short one cannot hold a long string.
    may_be_deep = data.count(b"[") + data.count(b"{") > settings.max_json_depth
    may_hold_long_string = len(data) > settings.max_string_bytes
    if may_be_deep or may_hold_long_string:
        raws = [message.raw for message in body.messages]
        depth, longest = json_depth_and_longest_string(raws if body.is_batch else raws[0], settings.max_json_depth)
        if depth > settings.max_json_depth:
            raise BodyLimitExceeded(
                HTTP_400_BAD_REQUEST,
                f"JSON nested too deeply: the limit is {settings.max_json_depth} levels (MCP_MAX_JSON_DEPTH)",
            )
        if longest > settings.max_string_bytes:
            raise BodyLimitExceeded(
                HTTP_413_PAYLOAD_TOO_LARGE,
                f"A string of {longest} bytes exceeds the limit of {settings.max_string_bytes} (MCP_MAX_STRING_BYTES)",
            )
    if len(data) > settings.max_argument_bytes:
        for message in body.messages:
            if message.kind == REQUEST and message.method == "tools/call":
                size = len(dumps(message.params.get("arguments")))
                if size > settings.max_argument_bytes:
                    raise BodyLimitExceeded(
                        HTTP_413_PAYLOAD_TOO_LARGE,
                        f"Tool arguments of {size} bytes exceed the limit of {settings.max_argument_bytes} "
                        "(MCP_MAX_ARGUMENT_BYTES)",
                    )


class CallSlots:
    """Concurrent tools/call requests per session in this worker, at most MCP_MAX_CONCURRENT_CALLS."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running: dict[str, int] = {}

    def acquire(self, session_id: str) -> bool:
        """Take a slot for one call; False when the session already runs its maximum."""
        # gevent never switches between this check and the increment, so no lock is needed.
        count = self.running.get(session_id, 0)
        if count >= self.limit:
            return False
        self.running[session_id] = count + 1
        return True

    def release(self, session_id: str) -> None:
        """Give a slot back when the call ends, however it ends."""
        count = self.running.get(session_id, 0) - 1
        if count > 0:
            self.running[session_id] = count
        else:
            self.running.pop(session_id, None)


class SessionQuotaExceeded(CapacityError):
    """A principal already holds MCP_MAX_SESSIONS_PER_PRINCIPAL sessions."""


class SessionQuota:
    """Sessions per authenticated principal, at most MCP_MAX_SESSIONS_PER_PRINCIPAL (the hub caps the total).

    The quota remembers which sessions each principal opened here and, when one is
    at its limit, asks the hub which of them still exist, so closed and expired
    sessions free their places. Counted per worker.
    """

    def __init__(self, hub: Any, limit: int) -> None:
        self.hub = hub
        self.limit = limit
        self.opened_by: dict[str, list[str]] = {}
        self.tracked = 0

    def session_exists(self, session_id: str) -> bool:
        """Whether the hub still holds a session, without refreshing its idle timer when the hub can."""
        return self.hub.peek_session(session_id) is not None

    def prune(self, principal: str) -> list[str]:
        """Forget a principal's sessions that have ended; return the live ones."""
        ids = self.opened_by.get(principal, [])
        live = [sid for sid in ids if self.session_exists(sid)]
        self.tracked -= len(ids) - len(live)
        if live:
            self.opened_by[principal] = live
        else:
            self.opened_by.pop(principal, None)
        return live

    def admit(self, principal: str | None) -> None:
        """Raise SessionQuotaExceeded if this principal may not open another session."""
        if principal is None:
            return  # authentication is off: only the hub's total applies
        if len(self.opened_by.get(principal, ())) >= self.limit and len(self.prune(principal)) >= self.limit:
            raise SessionQuotaExceeded(
                f"you already hold {self.limit} sessions (MCP_MAX_SESSIONS_PER_PRINCIPAL); "
                "end one with DELETE or let it expire"
            )

    def opened(self, session_id: str, principal: str | None) -> None:
        """Remember a session a principal just opened."""
        if principal is None:
            return
        self.opened_by.setdefault(principal, []).append(session_id)
        self.tracked += 1
        if self.tracked > 2 * self.hub.settings.max_sessions:
            # Many principals that each left a few sessions behind: sweep them all once.
            for name in list(self.opened_by):
                self.prune(name)

"""Requests per principal on the MCP routes, with flask-limiter: Redis when MCP_REDIS_URL is set, else memory.

The key is the authenticated principal, or the client address when authentication
is off, so one client cannot starve the others. The limit counts messages: every
request costs one, and a batch one per message it carries (the rest are charged
once the body is read; a batch refused for being over costs nothing). A breach
answers 429 with Retry-After and a JSON-RPC error body. When Redis is unreachable
the limiter falls back to per-worker memory rather than refusing every request.

flask-limiter is the ratelimit extra: web/security.py imports this module only when MCP_RATE_LIMIT is set. On a
host app MCP's Limiter sits beside the host's own (flask-limiter keeps every Limiter of an app in
app.extensions["limiter"]; MCP's is also McpExtension.limiter): it reads none of the host's RATELIMIT_* config,
counts MCP's routes only, and answers its 429 on MCP's pages only, so the host's limits and 429 page stay the host's.
"""

from __future__ import annotations

import logging
import math
import time
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import unquote, urlsplit

from flask import Flask, Response, current_app, g, request
from flask_limiter import Limiter, RateLimitExceeded

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.errors import INVALID_REQUEST
from flask_mcp_gevent.logs import loggable
from flask_mcp_gevent.transports.http_io import HttpProblem, problem_response
from flask_mcp_gevent.web.mcp_app import MCP_BLUEPRINT, MCP_EXTENSION, handle_error_in, server_of

__all__ = ["init_rate_limit", "rate_limit_key"]

log = logging.getLogger("mcp.http")


def rate_limit_key() -> str:
    """Count requests per principal (set by the security screen, which runs first), else per client address."""
    caller = g.get("mcp_caller")
    if caller is not None:
        return "principal:" + caller.name
    return "address:" + (request.remote_addr or "unknown")


def outside_mcp_routes() -> bool:
    """Health checks and metadata are not rate limited: only the MCP endpoints are."""
    return request.blueprint != MCP_BLUEPRINT


def init_rate_limit(app: Flask, settings: Settings, scope: tuple[str, ...] | None = None) -> Limiter:
    """Install the MCP_RATE_LIMIT limiter on app, with its 429 on scope's blueprints (None: the whole app)."""
    storage_uri, options = rate_limit_storage(settings)
    cluster_down: tuple[type[Exception], ...] = ()
    if settings.redis_cluster:
        from redis.exceptions import RedisClusterException  # the redis extra, which MCP_REDIS_CLUSTER needs

        cluster_down = (RedisClusterException,)
    try:
        limiter = new_limiter(settings, storage_uri, options)
        limiter.init_app(cast(Flask, OwnConfig(app)))
    except cluster_down:
        # A cluster client asks a node for the slot map as it is made (nothing is registered on the app yet):
        # with no node reachable at startup, this worker counts in its own memory rather than fail to boot.
        log.warning("rate limit counted per worker: no Redis Cluster node answered at startup")
        limiter = new_limiter(settings, "memory://", {})
        limiter.init_app(cast(Flask, OwnConfig(app)))
    app.extensions[MCP_EXTENSION].limiter = limiter
    if scope is None:
        app.register_error_handler(RateLimitExceeded, render_rate_limited)
    else:
        # MCP's pages only, so that a host's own Limiter keeps its own 429 page on the host's routes.
        for blueprint in scope:
            handle_error_in(app, blueprint, RateLimitExceeded, render_rate_limited)
    server_of(app).charge_batch = charge_batch
    return limiter


class OwnConfig:
    """The app as MCP's Limiter.init_app sees it: the app's hooks and extensions, with an empty config of its own.

    flask-limiter reads RATELIMIT_* from app.config (default, meta and fallback limits, storage options, on_breach,
    enabled), and writes defaults back. On a host app those are the host's settings for its own Limiter: from them
    MCP's would count the host's routes too, or stop counting MCP's. MCP's Limiter takes MCP_* settings only.
    """

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.config: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        """Everything but the config is the app's (before_request, after_request, extensions, ...)."""
        return getattr(self.app, name)


def mcp_limiter() -> Limiter:
    """The current app's MCP_RATE_LIMIT limiter."""
    return current_app.extensions[MCP_EXTENSION].limiter


def new_limiter(settings: Settings, storage_uri: str, options: dict[str, Any]) -> Limiter:
    """The limiter of MCP_RATE_LIMIT over one storage, falling back to memory when that storage fails."""
    return Limiter(
        rate_limit_key,
        application_limits=[settings.rate_limit],
        application_limits_exempt_when=outside_mcp_routes,
        storage_uri=storage_uri,
        storage_options=options,
        strategy="fixed-window",
        key_prefix="mcp-rate",
        headers_enabled=False,
        in_memory_fallback_enabled=settings.uses_redis,
        swallow_errors=True,
    )


def rate_limit_storage(settings: Settings) -> tuple[str, dict[str, Any]]:
    """Where the counters live (the store's Redis: one server, the Sentinels' master, or the cluster) and how."""
    if not settings.uses_redis:
        return "memory://", {}
    timeouts = {"socket_timeout": settings.redis_timeout_s, "socket_connect_timeout": settings.redis_timeout_s}
    if settings.redis_sentinels:
        sentinel_options = {**timeouts, "password": settings.redis_sentinel_password or None}
        options: dict[str, Any] = {**timeouts, "use_replicas": False, "sentinel_kwargs": sentinel_options}
        password = urlsplit(settings.redis_url).password if settings.redis_url else None
        if password:
            options["password"] = unquote(password)
        return f"redis+sentinel://{','.join(settings.redis_sentinels)}/{settings.redis_sentinel_master}", options
    if settings.redis_cluster:
        return "redis+cluster://" + urlsplit(settings.redis_url).netloc, timeouts
    return settings.redis_url, timeouts


def seconds_to_retry(reset_at: float, window_s: int) -> int:
    """Seconds until a window resets: never more than one window, never less than a second (reset_at is whole)."""
    return max(1, min(math.ceil(reset_at - time.time()), window_s))


def rate_limited(retry_after: int, over: str = "the limit is") -> HttpProblem:
    """The 429 with Retry-After and a JSON-RPC error body; over says what went over the limit."""
    rate = server_of(current_app).settings.rate_limit
    return HttpProblem(HTTPStatus.TOO_MANY_REQUESTS, INVALID_REQUEST,
                       f"Too many requests: {over} {rate} (MCP_RATE_LIMIT); retry in {retry_after} s",
                       data={"retryAfter": retry_after}, headers={"Retry-After": str(retry_after)})


def render_rate_limited(exc: RateLimitExceeded) -> Response:
    """429 for a request over MCP_RATE_LIMIT, or over a host Limiter's limit on MCP's pages (JSON either way)."""
    current = mcp_limiter().current_limit
    if current is None or not current.breached:
        # The host's own Limiter refused it (a host's limits may cover MCP's routes too): not MCP_RATE_LIMIT.
        return problem_response(HttpProblem(HTTPStatus.TOO_MANY_REQUESTS, INVALID_REQUEST,
                                            f"Too many requests ({exc.description})"))
    retry_after = seconds_to_retry(current.reset_at, current.limit.get_expiry())
    log.info("rate limit exceeded by %s", loggable(rate_limit_key()))
    return problem_response(rate_limited(retry_after))


def charge_batch(messages: int) -> None:
    """Charge a batch's messages beyond the first (the request paid for that one); 429, costing nothing, if over."""
    limiter = mcp_limiter()
    over = charge_extra(limiter, messages - 1)
    if over is not None:
        raise batch_over_limit(limiter, over, messages)


def charge_extra(limiter: Limiter, extra: int) -> Any:
    """Charge extra to every limit this request counted against; if one is over, give everything back and return it."""
    charged = []
    try:
        for current in limiter.current_limits:
            # Counted first and given back when over, so that two batches at once never both get through.
            charged.append(current)
            if not limiter.limiter.hit(current.limit, *current.request_args, cost=extra):
                for limit in limiter.current_limits:
                    refund = 1 + (extra if limit in charged else 0)  # the request's own one, and the extra
                    limiter.limiter.storage.incr(limit.key, limit.limit.get_expiry(), amount=-refund)
                return current
    except Exception as failure:  # the store failed: let the batch through, as flask-limiter does
        log.warning("could not charge a batch to the rate limit: %s", type(failure).__name__)
    return None


def batch_over_limit(limiter: Limiter, current: Any, messages: int) -> HttpProblem:
    """The 429 for a batch with more messages than the limit has left."""
    log.info("rate limit exceeded by %s with a batch of %d", loggable(rate_limit_key()), messages)
    try:
        window = limiter.limiter.get_window_stats(current.limit, *current.request_args)
        retry_after = seconds_to_retry(window.reset_time, current.limit.get_expiry())
    except Exception:  # the store failed after the refund: a whole window is a safe answer
        retry_after = current.limit.get_expiry()
    if messages > current.limit.amount:
        return rate_limited(retry_after, f"send smaller batches: one of {messages} messages never fits the limit of")
    return rate_limited(retry_after, f"a batch of {messages} messages is more than what is left of the limit of")

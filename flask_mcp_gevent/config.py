"""Settings: every knob the server has, read from `MCP_*` environment variables.

`Settings.from_environ()` takes any mapping, so tests pass a dict and never touch
`os.environ`. Each field's default is the value used when the variable is unset. A setting
whose pip extra is not installed (EXTRAS) is refused at start with the command that installs it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import ipaddress
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

__all__ = ["EXTRAS", "ConfigError", "Settings", "extra_installed", "install_hint", "require_extra"]

PREFIX = "MCP_"
# Settings whose values are secrets: never shown to tools through Settings.extra.
SECRET_SETTINGS = frozenset({"MCP_REQUEST_STATE_KEY", "MCP_REDIS_SENTINEL_PASSWORD"})
LOCALHOST_ORIGINS = (
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
)


class ConfigError(ValueError):
    """A setting whose value cannot be used."""


# Settings that were renamed: the old name still works, with a note in the log; the new one wins when both are set.
DEPRECATED_NAMES = {"MCP_LEGACY": "MCP_SESSION_ERA"}


def current_field_name(name: str) -> str:
    """A Settings field name as given (settings=, app.config), the current one for a deprecated name (logged)."""
    old = PREFIX + name.upper()
    if old not in DEPRECATED_NAMES:
        return name
    new = DEPRECATED_NAMES[old]
    logging.getLogger("mcp.settings").warning("%s is deprecated: it is now %s, which says what it turns off",
                                              name, new[len(PREFIX):].lower())
    return new[len(PREFIX):].lower()


def with_current_names(environ: Mapping[str, str]) -> Mapping[str, str]:
    """environ with each deprecated variable set under its current name (unless that is set too), logged once."""
    renamed = {old: new for old, new in DEPRECATED_NAMES.items() if old in environ}
    if not renamed:
        return environ
    current = dict(environ)
    for old, new in renamed.items():
        logging.getLogger("mcp.settings").warning("%s is deprecated: it is now %s, which says what it turns off",
                                                  old, new)
        current.setdefault(new, environ[old])
    return current


# The pip extras of pyproject.toml, by the modules each brings (import names). `pip install flask-mcp-gevent` brings
# what one gevent worker needs; a setting that needs more names its extra, and its modules are imported only where
# that setting is used.
EXTRAS: dict[str, tuple[str, ...]] = {
    "redis": ("redis", "hiredis"),
    "oauth": ("jwt",),
    "metrics": ("prometheus_client",),
    "ratelimit": ("flask_limiter", "limits"),
}


def extra_installed(extra: str) -> bool:
    """Whether every module of a pip extra can be imported here (looked up, not imported)."""
    return all(importlib.util.find_spec(module) is not None for module in EXTRAS[extra])


def install_hint(extra: str) -> str:
    """The pip command that installs a pip extra."""
    return f"pip install 'flask-mcp-gevent[{extra}]'"


def require_extra(extra: str, setting: str) -> None:
    """Raise ConfigError naming setting and the command that installs extra, when extra is not installed."""
    if not extra_installed(extra):
        raise ConfigError(f"{setting} needs the {extra} extra: {install_hint(extra)}")


def parse_list(raw: str) -> tuple[str, ...]:
    """Split a comma-separated setting, dropping blanks."""
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def parse_bool(raw: str) -> bool:
    """Read 1/0, true/false, yes/no, on/off."""
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"not a boolean: {raw!r}")


@dataclass(frozen=True)
class Settings:
    """The server's configuration; field X is read from MCP_X."""

    bind: str = "127.0.0.1:8000"
    workers: int = 1
    worker_connections: int = 12000
    graceful_timeout_s: int = 10
    keepalive_s: float = 15.0
    session_ttl_s: float = 3600.0
    pending_session_ttl_s: float = 30.0
    resume_window_s: float = 60.0
    max_body_bytes: int = 4 * 1024 * 1024
    max_sessions: int = 10000
    queue_max: int = 1000
    queue_max_bytes: int = 16 * 1024 * 1024
    replay_max: int = 500
    replay_max_bytes: int = 8 * 1024 * 1024
    page_size: int = 50
    client_request_timeout_s: float = 60.0
    allowed_origins: tuple[str, ...] = LOCALHOST_ORIGINS
    allowed_hosts: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    redis_url: str = ""
    redis_timeout_s: float = 2.0
    redis_pool_size: int = 32
    # High availability: the master found through Sentinel (host:port list, master name), or a Redis Cluster.
    redis_sentinels: tuple[str, ...] = ()
    redis_sentinel_master: str = ""
    redis_sentinel_password: str = field(default="", repr=False)
    redis_cluster: bool = False
    delivery_retry_s: float = 30.0
    log_level: str = "INFO"
    log_format: str = "text"
    server_name: str = "flask-mcp-gevent"
    # None (unset): a line naming the tools served, from the registry (flask_mcp_gevent/protocol/instructions.py).
    instructions: str | None = None
    files_root: str = ""
    completion_scan_max: int = 10000
    console: bool = True
    # The session era (2024-11-05 to 2025-11-25: legacy HTTP+SSE, Streamable HTTP sessions); 0 serves MCP 2026-07-28
    # only. MCP_LEGACY, its old name, still works (DEPRECATED_NAMES).
    session_era: bool = True
    # security: authentication, limits, headers (see SECURITY.md)
    api_keys_file: str = ""
    oauth_jwks_url: str = ""
    oauth_issuer: str = ""
    oauth_audience: str = ""
    oauth_authorization_servers: tuple[str, ...] = ()
    oauth_required_scopes: tuple[str, ...] = ()
    allow_unauthenticated: bool = False
    cors_origins: tuple[str, ...] = ()
    max_json_depth: int = 64
    max_string_bytes: int = 1024 * 1024
    max_batch: int = 100
    max_argument_bytes: int = 1024 * 1024
    max_sessions_per_principal: int = 100
    max_listens_per_principal: int = 100
    # subscriptions/listen (MCP 2026-07-28): a stream keeps its request while it is open, so the request's params
    # are bounded in JSON bytes, each URI and task id in bytes, and the task ids (each read once, in the store) in
    # number.
    listen_max_bytes: int = 16 * 1024
    listen_uri_max_bytes: int = 2048
    listen_task_id_max_bytes: int = 128
    listen_max_task_ids: int = 32
    # A host app whose routes are tools: the most bytes of the host's own credential headers one request may carry
    # on to them (web/callers.py); each call holds its request's, for as long as it runs.
    caller_credentials_max_bytes: int = 32 * 1024
    max_concurrent_calls: int = 64
    max_sessions_per_address: int = 1000
    max_connections_per_address: int = 1000
    body_timeout_s: float = 30.0
    rate_limit: str = ""
    # MCP 2026-07-28 multi round-trip requests: the requestState key (a secret: never in repr or logs) and bounds
    request_state_key: str = field(default="", repr=False)
    request_state_ttl_s: float = 600.0
    request_state_max_bytes: int = 65536
    # The memory store's record of used states (ctx.consume_answers); Redis keeps one key per state instead.
    request_state_used_max: int = 50000
    # The tasks extension (MCP 2026-07-28): how long a task is kept (default, and the most a client may ask for),
    # how many one principal may hold, how much of its request and how big a result it may keep, how much the
    # memory store's tasks take together, the largest payload its notifications carry, and the lease a running
    # task's worker renews.
    task_ttl_s: float = 3600.0
    task_max_ttl_s: float = 86400.0
    task_max_per_principal: int = 100
    task_max_request_bytes: int = 1024 * 1024
    task_max_result_bytes: int = 1024 * 1024
    tasks_max_bytes: int = 64 * 1024 * 1024
    task_max_notification_bytes: int = 16 * 1024
    task_lease_s: float = 30.0
    task_poll_interval_ms: int = 1000
    extra: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Build settings from an environment mapping (os.environ when None)."""
        environ = with_current_names(os.environ if environ is None else environ)
        values: dict[str, Any] = {}
        for spec in dataclasses.fields(cls):
            if spec.name == "extra":
                continue
            key = PREFIX + spec.name.upper()
            if key in environ:
                values[spec.name] = cast_setting(key, environ[key], spec.type)
        values.update(overrides)
        # Tools read their own MCP_* settings here; the server's secrets are not theirs to read.
        values["extra"] = {k: v for k, v in environ.items() if k.startswith(PREFIX) and k not in SECRET_SETTINGS}
        settings = cls(**values)
        settings.check()
        return settings

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any] | None) -> Settings:
        """Build settings from a dict of MCP_* names or field names (for tests)."""
        config = dict(config or {})
        environ = {k: str(v) for k, v in config.items() if k.startswith(PREFIX)}
        overrides = {k: v for k, v in config.items() if not k.startswith(PREFIX)}
        return cls.from_environ(environ, **overrides)

    def check(self) -> None:
        """Reject combinations that cannot work, with a message that says how to fix them."""
        if self.workers < 1:
            raise ConfigError("MCP_WORKERS must be at least 1")
        self.check_extras()
        if self.request_state_ttl_s <= 0 or self.request_state_max_bytes < 1024 or self.request_state_used_max < 1:
            raise ConfigError("MCP_REQUEST_STATE_TTL_S must be positive, MCP_REQUEST_STATE_MAX_BYTES at least 1024 "
                              "and MCP_REQUEST_STATE_USED_MAX at least 1")
        self.check_redis()
        if self.workers > 1 and not self.uses_redis and self.session_era:
            raise ConfigError(
                f"{self.workers} workers (MCP_WORKERS or gunicorn -w) need MCP_REDIS_URL: with in-memory "
                "sessions a POST that lands on another worker cannot reach its stream. Set MCP_REDIS_URL "
                "(e.g. redis://127.0.0.1:6379/0), use one worker, or serve MCP 2026-07-28 only (MCP_SESSION_ERA=0)."
            )
        if not 0 < self.task_ttl_s <= self.task_max_ttl_s or self.task_lease_s <= 0:
            raise ConfigError("MCP_TASK_TTL_S must be positive and at most MCP_TASK_MAX_TTL_S; MCP_TASK_LEASE_S "
                              "must be positive")
        if (self.task_max_per_principal < 1 or self.task_poll_interval_ms < 1 or self.task_max_notification_bytes < 0
                or min(self.task_max_result_bytes, self.task_max_request_bytes, self.tasks_max_bytes) < 1024):
            raise ConfigError("MCP_TASK_MAX_PER_PRINCIPAL and MCP_TASK_POLL_INTERVAL_MS must be at least 1, "
                              "MCP_TASK_MAX_RESULT_BYTES, MCP_TASK_MAX_REQUEST_BYTES and MCP_TASKS_MAX_BYTES at "
                              "least 1024, MCP_TASK_MAX_NOTIFICATION_BYTES 0 or more")
        if self.log_format not in ("text", "json"):
            raise ConfigError("MCP_LOG_FORMAT must be 'text' or 'json'")
        for name in ("keepalive_s", "session_ttl_s", "pending_session_ttl_s", "client_request_timeout_s",
                     "redis_timeout_s", "body_timeout_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{PREFIX}{name.upper()} must be positive")
        if self.delivery_retry_s < 0:
            raise ConfigError(f"{PREFIX}DELIVERY_RETRY_S must be 0 (no retries) or more")
        for name in ("max_body_bytes", "max_sessions", "queue_max", "queue_max_bytes", "replay_max", "replay_max_bytes",
                     "page_size", "redis_pool_size", "completion_scan_max"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{PREFIX}{name.upper()} must be at least 1")
        self.check_security()
        self.check_exposure([self.bind])

    def check_extras(self) -> None:
        """Refuse a setting whose optional dependencies (a pip extra) are not installed, naming the extra."""
        for setting, extra, value in (("MCP_REDIS_URL", "redis", self.redis_url),
                                      ("MCP_REDIS_SENTINELS", "redis", self.redis_sentinels),
                                      ("MCP_REDIS_CLUSTER", "redis", self.redis_cluster),
                                      ("MCP_OAUTH_JWKS_URL", "oauth", self.oauth_jwks_url),
                                      ("MCP_RATE_LIMIT", "ratelimit", self.rate_limit)):
            if value:
                require_extra(extra, setting)

    @property
    def uses_redis(self) -> bool:
        """True when the store (and the rate limit) live in Redis: MCP_REDIS_URL or MCP_REDIS_SENTINELS is set."""
        return bool(self.redis_url or self.redis_sentinels)

    def check_redis(self) -> None:
        """Reject a Redis setup that cannot work: Sentinel without a master name, a cluster without a node."""
        if self.redis_url and urlsplit(self.redis_url).scheme not in ("redis", "rediss", "unix"):
            raise ConfigError("MCP_REDIS_URL must start with redis://, rediss:// or unix://")
        if self.redis_sentinels:
            if self.redis_cluster:
                raise ConfigError("MCP_REDIS_SENTINELS and MCP_REDIS_CLUSTER=1 exclude each other: a Redis Cluster "
                                  "fails over by itself. Set one of them.")
            if not self.redis_sentinel_master:
                raise ConfigError("MCP_REDIS_SENTINELS needs MCP_REDIS_SENTINEL_MASTER, the name the Sentinels "
                                  "monitor the master under (the name in 'sentinel monitor <name> ...').")
            for entry in self.redis_sentinels:
                host, _, port = entry.rpartition(":")
                if not host.strip("[]") or not port.isdigit() or not 0 < int(port) < 65536:
                    raise ConfigError(f"MCP_REDIS_SENTINELS: {entry[:60]!r} is not host:port "
                                      "(e.g. MCP_REDIS_SENTINELS=10.0.0.1:26379,10.0.0.2:26379)")
        elif self.redis_sentinel_master or self.redis_sentinel_password:
            raise ConfigError("MCP_REDIS_SENTINEL_MASTER and MCP_REDIS_SENTINEL_PASSWORD need MCP_REDIS_SENTINELS "
                              "(host:port of each Sentinel)")
        if self.redis_cluster:
            if not self.redis_url:
                raise ConfigError("MCP_REDIS_CLUSTER=1 needs MCP_REDIS_URL pointing at any node of the cluster "
                                  "(e.g. redis://10.0.0.1:6379)")
            database = urlsplit(self.redis_url).path.strip("/")
            if database not in ("", "0"):
                raise ConfigError(f"MCP_REDIS_URL names database {database[:10]!r}: a Redis Cluster has database "
                                  "0 only (MCP_REDIS_CLUSTER=1)")

    @property
    def authentication_configured(self) -> bool:
        """True when API keys or OAuth tokens are required on the HTTP transports."""
        return bool(self.api_keys_file or self.oauth_jwks_url)

    def check_security(self) -> None:
        """Reject incomplete OAuth settings, unreadable rate limits and limits below 1."""
        for name in ("max_json_depth", "max_string_bytes", "max_batch", "max_argument_bytes",
                     "max_sessions_per_principal", "max_listens_per_principal", "max_concurrent_calls",
                     "max_sessions_per_address",
                     "max_connections_per_address", "listen_max_bytes", "listen_uri_max_bytes",
                     "listen_task_id_max_bytes", "listen_max_task_ids", "caller_credentials_max_bytes"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{PREFIX}{name.upper()} must be at least 1")
        if self.oauth_jwks_url and not (self.oauth_issuer and self.oauth_audience):
            raise ConfigError(
                "MCP_OAUTH_JWKS_URL needs MCP_OAUTH_ISSUER (the authorization server's issuer) and "
                "MCP_OAUTH_AUDIENCE (this server's resource URL, e.g. https://mcp.example.com/mcp)"
            )
        if self.oauth_audience and not self.oauth_audience.startswith(("https://", "http://")):
            raise ConfigError("MCP_OAUTH_AUDIENCE must be this server's absolute resource URL (https://host/mcp)")
        if self.rate_limit:
            from limits import parse_many  # flask-limiter's own parser, so the value means what it will enforce

            try:
                parse_many(self.rate_limit)
            except ValueError:
                raise ConfigError(
                    f"MCP_RATE_LIMIT={self.rate_limit!r} is not a rate; write e.g. '600/minute' or '10/second'"
                ) from None

    def check_exposure(self, binds: Iterable[str]) -> None:
        """Refuse to listen beyond this machine without authentication, unless MCP_ALLOW_UNAUTHENTICATED=1."""
        if self.authentication_configured or self.allow_unauthenticated:
            return
        exposed = [bind for bind in binds if not is_local_bind(bind)]
        if exposed:
            raise ConfigError(
                f"Refusing to listen on {', '.join(exposed)} without authentication: anyone who can reach "
                "the port could call every tool. Set MCP_API_KEYS_FILE or MCP_OAUTH_JWKS_URL, bind to "
                "127.0.0.1 behind a proxy that authenticates, or set MCP_ALLOW_UNAUTHENTICATED=1 to accept the risk."
            )


def is_local_bind(address: str) -> bool:
    """True for a loopback HOST:PORT or a unix socket: nothing off this machine can connect."""
    address = address.strip()
    if address.startswith("unix:"):
        return True
    if address.startswith("fd://"):
        return False
    host = address.rsplit(":", 1)[0] if address.count(":") == 1 or address.startswith("[") else address
    return is_loopback_host(host)


# Asked twice per request (the Host header and the listener's name): parsing an address costs more than the cache.
@functools.lru_cache(maxsize=256)
def is_loopback_host(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1), with or without IPv6 brackets."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name other than localhost may resolve anywhere


def cast_setting(key: str, raw: str, annotation: Any) -> Any:
    """Convert one environment string to the field's type, naming the variable on failure."""
    casts: dict[str, Callable[[str], Any]] = {
        "str": str,
        "str | None": str,
        "int": int,
        "float": float,
        "bool": parse_bool,
        "tuple[str, ...]": parse_list,
    }
    cast = casts.get(annotation if isinstance(annotation, str) else getattr(annotation, "__name__", ""))
    if cast is None:
        raise ConfigError(f"{key}: unsupported setting type {annotation!r}")
    try:
        return cast(raw)
    except ValueError:
        raise ConfigError(f"{key}={raw!r} is not a valid {annotation}") from None


def read_setting(key: str, value: Any, annotation: Any) -> Any:
    """One setting given in code (MCP(settings=...), app.config) as its field's type, naming key when it is not one.

    Text is read as an environment variable's is; any other value must already be of the field's type (an int
    for an int, a number for a float, a list of strings for a list, a path or None (empty) for text), so a wrong
    one stops the start, not a request.
    """
    kind = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    if isinstance(value, os.PathLike) and kind in ("str", "str | None"):
        value = os.fspath(value)
    if value is None and kind == "str":  # app.config["MCP_REDIS_URL"] = os.environ.get(...): empty, as unset there
        value = ""
    if isinstance(value, str):
        return cast_setting(key, value, annotation)
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "float" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "bool" and (isinstance(value, bool) or value in (0, 1)):
        return bool(value)
    if kind == "str | None" and value is None:
        return None
    if kind == "tuple[str, ...]" and isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ConfigError(f"{key}={value!r} is not a valid {annotation}")

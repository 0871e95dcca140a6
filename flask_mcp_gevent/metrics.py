"""Prometheus metrics: a few counter increments per request, exposed at /metrics.

Under gunicorn every worker writes its values to memory-mapped files in
PROMETHEUS_MULTIPROC_DIR (gunicorn.conf.py sets that up, and removes a dead
worker's live gauges), and /metrics adds up all workers. Without that variable
(tests, `python app.py`, stdio) the values live in this process only.

prometheus-client is the metrics extra: without it every instrument is a no-op (NoInstruments) and /metrics
answers 404 naming the extra (web/health.py).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

from flask_mcp_gevent.config import extra_installed

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

__all__ = ["Instruments", "NoInstruments", "available", "instruments", "label_methods", "multiprocess_dir", "render"]

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Tool calls run from well under a millisecond (echo) to the client request timeout (sampling).
TOOL_CALL_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Method names come from clients: anything the server does not implement shares one label value.
OTHER_METHOD = "other"


def available() -> bool:
    """Whether prometheus-client (the metrics extra) is installed, so that there are metrics to count and serve."""
    return extra_installed("metrics")


def multiprocess_dir() -> str | None:
    """Where gunicorn's workers keep their values, or None in single-process mode."""
    return os.environ.get(MULTIPROC_ENV) or None


class Instruments:
    """The server's metrics, and the cheap calls the hot path makes."""

    def __init__(self, registry: CollectorRegistry, known_methods: Collection[str]) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.registry = registry
        self.known_methods = known_methods
        self.requests = Counter("mcp_requests", "JSON-RPC requests answered, by method and outcome "
                                "(ok, error with its JSON-RPC code, or cancelled)",
                                ["method", "outcome", "code"], registry=registry)
        self.tool_calls = Histogram("mcp_tool_call_duration_seconds", "Time to answer tools/call, in seconds",
                                    buckets=TOOL_CALL_BUCKETS, registry=registry)
        self.streams = Gauge("mcp_open_streams", "Open SSE streams: legacy sessions, standalone Streamable HTTP "
                             "streams, and POST answers streamed as SSE", ["kind"], registry=registry,
                             multiprocess_mode="livesum")
        # Sampled when scraped: the in-memory store runs one worker, the Redis store counts for all of them,
        # so the freshest value is the right one either way.
        self.sessions = Gauge("mcp_sessions", "Open sessions, as the store counts them when /metrics is scraped",
                              registry=registry, multiprocess_mode="livemostrecent")
        self.sessions_opened = Counter("mcp_sessions_opened", "Sessions opened, by transport", ["transport"],
                                       registry=registry)
        self.queue_drops = Counter("mcp_stream_queue_drops", "Streams closed because their client read too slowly "
                                   "(the queue reached MCP_QUEUE_MAX or MCP_QUEUE_MAX_BYTES)", registry=registry)
        self.replay_gaps = Counter("mcp_replay_gaps", "Streams resumed after an event their session's replay log "
                                   "had already dropped (MCP_REPLAY_MAX, MCP_REPLAY_MAX_BYTES): events between "
                                   "may be lost", registry=registry)
        # labels() validates and locks on every call; the hot path looks children up in a plain dict instead.
        self._request_children: dict[tuple[str, str, str], Any] = {}
        self._stream_children: dict[str, Any] = {}

    def count_request(self, method: Any, response: Any, seconds: float) -> None:
        """Count one answered (or cancelled) request; time it too when it is a tool call."""
        if response is None:
            outcome, code = "cancelled", ""
        elif "error" in response:
            outcome, code = "error", str(response["error"].get("code"))
        else:
            outcome, code = "ok", ""
        label = method if method in self.known_methods else OTHER_METHOD
        key = (label, outcome, code)
        child = self._request_children.get(key)
        if child is None:
            child = self._request_children[key] = self.requests.labels(label, outcome, code)
        child.inc()
        if method == "tools/call":
            self.tool_calls.observe(seconds)

    def stream_opened(self, kind: str) -> None:
        """An SSE stream started sending."""
        self._stream(kind).inc()

    def stream_closed(self, kind: str) -> None:
        """An SSE stream ended (client gone, session closed, or shutdown)."""
        self._stream(kind).dec()

    def _stream(self, kind: str) -> Any:
        """The gauge child for one kind of stream."""
        child = self._stream_children.get(kind)
        if child is None:
            child = self._stream_children[kind] = self.streams.labels(kind)
        return child

    def session_opened(self, transport: str) -> None:
        """Count a new session."""
        self.sessions_opened.labels(transport).inc()

    def queue_dropped(self) -> None:
        """Count a stream cut off for reading too slowly."""
        self.queue_drops.inc()

    def replay_gap(self) -> None:
        """Count a stream resumed past a hole in its replay log."""
        self.replay_gaps.inc()

    def sample_sessions(self, count: int) -> None:
        """Record how many sessions this process's store holds now."""
        self.sessions.set(count)


class NoInstruments(Instruments):
    """The instruments without prometheus-client: every call counts nothing."""

    def __init__(self, known_methods: Collection[str]) -> None:
        self.known_methods = known_methods

    def count_request(self, method: Any, response: Any, seconds: float) -> None:
        """Count nothing."""

    def stream_opened(self, kind: str) -> None:
        """Count nothing."""

    def stream_closed(self, kind: str) -> None:
        """Count nothing."""

    def session_opened(self, transport: str) -> None:
        """Count nothing."""

    def queue_dropped(self) -> None:
        """Count nothing."""

    def replay_gap(self) -> None:
        """Count nothing."""

    def sample_sessions(self, count: int) -> None:
        """Count nothing."""


_instruments: Instruments | None = None
# The method names that get a label of their own: the server's method table, given by label_methods.
_known_methods: frozenset[str] = frozenset()


def label_methods(names: Iterable[str]) -> None:
    """Give the methods the server implements a label each; every other method name counts as OTHER_METHOD."""
    global _known_methods
    _known_methods = frozenset(names)
    if _instruments is not None:
        _instruments.known_methods = _known_methods


def instruments() -> Instruments:
    """The process's Instruments, created on first use (so never before gunicorn has forked)."""
    global _instruments
    if _instruments is None:
        if available():
            from prometheus_client import CollectorRegistry

            _instruments = Instruments(CollectorRegistry(auto_describe=True), _known_methods)
        else:
            _instruments = NoInstruments(_known_methods)
    return _instruments


def render(accept: str | None = None, session_count: int | None = None) -> tuple[bytes, str]:
    """Every worker's metrics (or this process's) in the format the scraper's Accept asks for, and its type.

    Only with prometheus-client installed (see available()).
    """
    from prometheus_client import CollectorRegistry
    from prometheus_client.exposition import choose_encoder
    from prometheus_client.multiprocess import MultiProcessCollector

    metrics = instruments()
    if session_count is not None:
        metrics.sample_sessions(session_count)
    encoder, content_type = choose_encoder(accept or "")
    directory = multiprocess_dir()
    if directory is None:
        return encoder(metrics.registry), content_type
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=directory)
    return encoder(registry), content_type

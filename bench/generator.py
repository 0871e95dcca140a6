"""The load generator: C sessions issue `tools/call echo` back to back for a fixed time, then one summary.

`run_load` is what `python -m bench.load` and the comparison runner (bench/compare.py) both drive.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import aiohttp

from bench.sessions import CallFailed, SseSession, StreamableSession, open_session

__all__ = ["http_client", "open_sessions", "percentile", "run_load", "summarize"]

DEFAULT_PATHS = {"sse": "/sse", "streamable": "/mcp", "stateless": "/mcp"}
ECHO_TEXT = "hello"
# A failure after which the session cannot carry another call.
FATAL_KINDS = frozenset({"stream_closed", "disconnected"})


def percentile(sorted_values: list[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values (0.0 when empty)."""
    if not sorted_values:
        return 0.0
    rank = max(1, min(len(sorted_values), math.ceil(fraction * len(sorted_values))))
    return sorted_values[rank - 1]


def summarize(latencies: list[float], errors: Counter, elapsed: float) -> dict[str, Any]:
    """Throughput, latency percentiles (ms) and error counts of one measured window."""
    ordered = sorted(latencies)
    return {
        "calls": len(ordered),
        "duration_s": round(elapsed, 3),
        "req_per_s": round(len(ordered) / elapsed, 1) if elapsed > 0 else 0.0,
        "latency_ms": {name: round(percentile(ordered, q) * 1000.0, 3)
                       for name, q in (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))},
        "errors": dict(sorted(errors.items())),
    }


async def drive(session: SseSession | StreamableSession, deadline: float, latencies: list[float],
                errors: Counter) -> None:
    """Call echo back to back until the deadline; record each latency or failure."""
    params = {"name": "echo", "arguments": {"text": ECHO_TEXT}}
    clock = time.perf_counter
    while clock() < deadline:
        started = clock()
        try:
            result = await session.call("tools/call", params)
        except CallFailed as failure:
            errors[failure.kind] += 1
            if failure.kind in FATAL_KINDS:
                return
            continue
        except (aiohttp.ClientError, ConnectionError):
            errors["disconnected"] += 1
            return
        content = result.get("content")
        if result.get("isError") or not content or content[0].get("text") != ECHO_TEXT:
            errors["wrong_result"] += 1
        else:
            latencies.append(clock() - started)


async def open_sessions(http: aiohttp.ClientSession, transport: str, base_url: str, paths: dict[str, str],
                        count: int, timeout: float, errors: Counter, parallel: int = 64) -> list:
    """Open count sessions, at most `parallel` handshakes at a time; failures are counted as open_<kind>."""
    gate = asyncio.Semaphore(parallel)

    async def one():
        async with gate:
            try:
                return await open_session(http, transport, base_url, paths, timeout)
            except CallFailed as failure:
                errors["open_" + failure.kind] += 1
            except (aiohttp.ClientError, ConnectionError, TimeoutError):
                errors["open_disconnected"] += 1
            return None

    opened = await asyncio.gather(*(one() for _ in range(count)))
    return [session for session in opened if session is not None]


def http_client(limit: int = 0) -> aiohttp.ClientSession:
    """An aiohttp session with unlimited pooled connections and no cookies."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=limit), cookie_jar=aiohttp.DummyCookieJar(),
                                 auto_decompress=False)


async def run_load(base_url: str, transport: str, concurrency: int, duration: float, *,
                   paths: dict[str, str] | None = None, warmup: float = 1.0, timeout: float = 10.0,
                   probe: Callable[[], float] | None = None) -> dict[str, Any]:
    """Open the sessions, warm up, then measure `duration` seconds of back-to-back echo calls."""
    paths = {**DEFAULT_PATHS, **(paths or {})}
    errors: Counter = Counter()
    async with http_client() as http:
        sessions = await open_sessions(http, transport, base_url, paths, concurrency, timeout, errors)
        try:
            if warmup > 0 and sessions:
                await asyncio.gather(*(drive(s, time.perf_counter() + warmup, [], Counter()) for s in sessions))
            latencies: list[float] = []
            cpu_before = probe() if probe else None
            started = time.perf_counter()
            await asyncio.gather(*(drive(s, started + duration, latencies, errors) for s in sessions))
            elapsed = time.perf_counter() - started
            cpu_after = probe() if probe else None
        finally:
            await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
    report = {"transport": transport, "url": base_url + paths[transport], "concurrency": concurrency,
              "sessions": len(sessions), **summarize(latencies, errors, elapsed)}
    if cpu_before is not None and cpu_after is not None and report["calls"]:
        report["server_cpu_s"] = round(cpu_after - cpu_before, 3)
        report["server_cpu_us_per_call"] = round((cpu_after - cpu_before) / report["calls"] * 1e6, 1)
    return report

"""The load generator: C sessions issue `tools/call echo` back to back for a fixed time.

    python -m bench.load --url http://127.0.0.1:8000/mcp --transport sse -c 32 -d 10
    python -m bench.load --compare --duration 10 --concurrency 32     # ours vs the SDK vs the floor
    python -m bench.load --compare --servers ours,sdk --transports streamable,modern   # the 2026-07-28 row
    python -m bench.load --idle 10000 --servers ours                  # memory per idle SSE session

A plain run prints one JSON line: req/s, p50/p90/p99 latency and errors by kind.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from bench.sessions import CallFailed, SseSession, StreamableSession, open_session

__all__ = ["main", "percentile", "run_load", "summarize"]

DEFAULT_PATHS = {"sse": "/sse", "streamable": "/mcp", "modern": "/mcp"}
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


def raise_fd_limit() -> int:
    """Raise this process's open-file limit to its hard limit (servers started from here inherit it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def split_url(url: str, transport: str) -> tuple[str, dict[str, str]]:
    """Split http://host:port/path into the base URL and the path for this transport."""
    parts = urlsplit(url)
    base = f"{parts.scheme}://{parts.netloc}"
    return base, ({transport: parts.path} if parts.path not in ("", "/") else {})


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Read the command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--compare", action="store_true", help="start each server in turn and compare them")
    mode.add_argument("--idle", type=int, metavar="N", help="measure server memory per idle SSE session over N")
    parser.add_argument("--url", help="server to load (plain mode), e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument("--transport", choices=("sse", "streamable", "modern"), default="sse",
                        help="modern: stateless 2026-07-28 POSTs (headers and _meta on every call, no session)")
    parser.add_argument("-c", "--concurrency", type=int, default=32, help="sessions, each with one call in flight")
    parser.add_argument("-d", "--duration", type=float, default=10.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each run")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a call counts as timed out")
    parser.add_argument("--server-pid", type=int, action="append", default=[],
                        help="plain mode: PIDs whose CPU time to charge per call (children included)")
    parser.add_argument("--servers", default="ours,sdk,floor", help="compare/idle: which servers, comma-separated")
    parser.add_argument("--transports", default="sse,streamable",
                        help="compare: which transports (sse, streamable, modern)")
    parser.add_argument("--rounds", type=int, default=1, help="compare: repeat and report medians")
    parser.add_argument("--redis", action="store_true",
                        help="compare: add ours on the Redis hub with 1 and 2 workers (needs redis-server)")
    parser.add_argument("--profile", metavar="PATH",
                        help="compare: record ours with py-spy during the run (collapsed stacks to PATH)")
    parser.add_argument("--server-env", action="append", default=[], metavar="MCP_X=V",
                        help="compare/idle: extra environment for our server")
    args = parser.parse_args(argv)
    if not (args.compare or args.idle) and not args.url:
        parser.error("give --url, --compare or --idle N")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the chosen mode and print its JSON line."""
    args = parse_args(argv)
    raise_fd_limit()
    if args.compare or args.idle:
        from bench import compare

        report = compare.run_compare(args) if args.compare else compare.run_idle(args)
    else:
        from bench.servers import cpu_seconds_of

        base, paths = split_url(args.url, args.transport)
        probe = (lambda: cpu_seconds_of(args.server_pid)) if args.server_pid else None
        report = asyncio.run(run_load(base, args.transport, args.concurrency, args.duration, paths=paths,
                                      warmup=args.warmup, timeout=args.timeout, probe=probe))
    sys.stdout.write(orjson.dumps(report).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Side-by-side runs: each server started in turn on loopback, loaded, measured through /proc, stopped.

`run_compare` measures throughput, latency and server CPU per call and prints the
ratios against the targets; `run_idle` measures resident memory per idle SSE session.
Progress goes to stderr; the caller prints the returned report as one JSON line.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench.generator import http_client, open_sessions, run_load
from bench.redis_topologies import TOPOLOGIES, redis_topology
from bench.servers import ROOT, ServerUnderTest, floor_server, our_server, redis_server, sdk_server, wsgi_floor_server

__all__ = ["run_compare", "run_idle"]

# What issues 7 and 12 ask of us, as (ratio name, comparison, bound).
TARGETS = (
    ("sse_throughput_vs_sdk", ">=", 2.0),
    ("sse_p99_vs_sdk", "<=", 0.5),
    ("sse_cpu_per_call_vs_sdk", "<=", 0.5),
    ("streamable_throughput_vs_sdk", ">=", 3.0),
    ("stateless_throughput_vs_sdk", ">=", 3.0),
    ("stateless_cpu_per_call_vs_sdk", "<=", 0.333),
    ("stateless_throughput_vs_ours_streamable", ">=", 1.0),
    # Issue 14: one Redis worker against the in-memory store, over each legacy wire.
    ("sse_redis_1w_vs_memory", ">=", 0.8),
    ("streamable_redis_1w_vs_memory", ">=", 0.9),
)
TRANSPORTS = ("sse", "streamable", "stateless")
# The floor is bare JSON-RPC with no MCP wire: it has no 2026-07-28 to compare. The WSGI floor (wsgi) is
# only that: a plain WSGI function answering 2026-07-28 and Streamable HTTP calls under the same gunicorn + gevent
# worker (its legacy SSE sessions are there for --idle: what the stack alone keeps per idle stream).
FLOOR_TRANSPORTS = ("sse", "streamable")
WSGI_FLOOR_TRANSPORTS = ("stateless", "streamable")
IDLE_TARGET_KIB = 25.0


def say(text: str) -> None:
    """Progress for the person watching (stderr, so stdout stays one JSON line)."""
    print(text, file=sys.stderr, flush=True)


def parse_env(pairs: list[str]) -> dict[str, str]:
    """Turn ["MCP_X=1", ...] into a dict."""
    return dict(pair.split("=", 1) for pair in pairs)


def server_factories(names: list[str], transport: str, args: Any) -> Iterator[tuple[str, Callable]]:
    """(label, factory) for each requested server that can run this transport."""
    env = parse_env(args.server_env)
    for name in names:
        if name in PAIRED:
            yield name, paired_factory(name, env, args)
        elif name == "ours":
            yield "ours", lambda: our_server(1, env)
        elif name == "sdk":
            yield "sdk", lambda: sdk_server(transport)
        elif name == "floor":
            if transport in FLOOR_TRANSPORTS:
                yield "floor", floor_server
        elif name == "wsgi":
            if transport in WSGI_FLOOR_TRANSPORTS:
                yield "wsgi", wsgi_floor_server
        else:
            raise SystemExit(f"unknown server {name!r}: choose from ours, sdk, floor, wsgi, {', '.join(PAIRED)}")


# A change against the commit before it (--base-tree: a checkout of that commit, run with this venv), on either store.
PAIRED = ("base", "ours-redis", "base-redis")


def paired_factory(name: str, env: dict[str, str], args: Any) -> Callable[[], ServerUnderTest]:
    """The factory of one side of a paired run: this tree or --base-tree, on the in-memory or the Redis store."""
    if name.startswith("base") and not args.base_tree:
        raise SystemExit(f"server {name!r} needs --base-tree DIR (a checkout of the commit to compare against)")
    tree = Path(args.base_tree).resolve() if name.startswith("base") else ROOT
    backend = {"MCP_REDIS_URL": args.redis_url} if name.endswith("-redis") else {}
    return lambda: our_server(1, {**env, **backend}, tree)


@contextmanager
def profiled(server: ServerUnderTest, path: str | None, seconds: float):
    """Record the server's workers with py-spy while the block runs (collapsed stacks to path)."""
    if not path:
        yield
        return
    recorder = subprocess.Popen(
        [str(Path(sys.executable).with_name("py-spy")), "record", "--format", "raw", "--rate", "100",
         "--duration", str(int(seconds) + 1), "--output", path, "--pid", str(server.worker_pids()[0])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        try:
            recorder.wait(seconds + 30)
        except subprocess.TimeoutExpired:
            recorder.kill()
            recorder.wait(5)


def measure(server: ServerUnderTest, transport: str, args: Any, profile_path: str | None = None) -> dict[str, Any]:
    """Start a server, load it over one transport, stop it; return the generator's report."""
    with server:
        with profiled(server, profile_path, args.duration + args.warmup):
            report = asyncio.run(run_load(server.base_url, transport, args.concurrency, args.duration,
                                          paths=server.paths, warmup=args.warmup, timeout=args.timeout,
                                          probe=server.cpu_seconds))
    return {"server": server.name, **report}


def median_of(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the headline numbers over rounds, with every round's errors added up."""
    errors: Counter = Counter()
    for report in reports:
        errors.update(report["errors"])
    cpu = [r["server_cpu_us_per_call"] for r in reports if "server_cpu_us_per_call" in r]
    return {
        "req_per_s": round(statistics.median(r["req_per_s"] for r in reports), 1),
        "p50_ms": round(statistics.median(r["latency_ms"]["p50"] for r in reports), 3),
        "p90_ms": round(statistics.median(r["latency_ms"]["p90"] for r in reports), 3),
        "p99_ms": round(statistics.median(r["latency_ms"]["p99"] for r in reports), 3),
        "cpu_us_per_call": round(statistics.median(cpu), 1) if cpu else None,
        "rounds": len(reports),
        "errors": dict(errors),
    }


def ratio(ours: float | None, theirs: float | None) -> float | None:
    """ours / theirs, or None when either is missing or zero."""
    if not ours or not theirs:
        return None
    return round(ours / theirs, 3)


def ratios_of(summary: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """Ours against the SDK and the floor, per transport; our stateless wire against our legacy Streamable HTTP."""
    ratios: dict[str, float | None] = {}
    for transport in TRANSPORTS:
        ours = summary.get(f"ours/{transport}")
        if ours is None:
            continue
        for peer in ("sdk", "floor", "wsgi"):
            theirs = summary.get(f"{peer}/{transport}")
            if theirs is None:
                continue
            ratios[f"{transport}_throughput_vs_{peer}"] = ratio(ours["req_per_s"], theirs["req_per_s"])
            ratios[f"{transport}_p99_vs_{peer}"] = ratio(ours["p99_ms"], theirs["p99_ms"])
            ratios[f"{transport}_cpu_per_call_vs_{peer}"] = ratio(ours["cpu_us_per_call"], theirs["cpu_us_per_call"])
    stack, sdk = summary.get("wsgi/stateless"), summary.get("sdk/stateless")
    if stack and sdk:
        # gunicorn + gevent alone, against the SDK: how much of a third of its CPU the stack leaves for the rest.
        ratios["wsgi_floor_cpu_per_call_vs_sdk"] = ratio(stack["cpu_us_per_call"], sdk["cpu_us_per_call"])
    stateless, legacy = summary.get("ours/stateless"), summary.get("ours/streamable")
    if stateless and legacy:
        ratios["stateless_throughput_vs_ours_streamable"] = ratio(stateless["req_per_s"], legacy["req_per_s"])
        ratios["stateless_cpu_per_call_vs_ours_streamable"] = ratio(stateless["cpu_us_per_call"],
                                                                   legacy["cpu_us_per_call"])
    ratios.update(topology_ratios(summary))
    ratios.update(paired_ratios(summary))
    for transport in ("sse", "streamable"):
        one, two = summary.get(f"ours-redis-1w/{transport}"), summary.get(f"ours-redis-2w/{transport}")
        if one and two:
            ratios[f"{transport}_redis_2w_vs_1w"] = ratio(two["req_per_s"], one["req_per_s"])
        memory = summary.get(f"ours/{transport}")
        if one and memory:
            ratios[f"{transport}_redis_1w_vs_memory"] = ratio(one["req_per_s"], memory["req_per_s"])
            ratios[f"{transport}_redis_1w_cpu_per_call_vs_memory"] = ratio(one["cpu_us_per_call"],
                                                                             memory["cpu_us_per_call"])
    return ratios


def paired_ratios(summary: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """This tree against --base-tree, per store and transport: throughput and server CPU per call (below 1: cheaper)."""
    ratios: dict[str, float | None] = {}
    for transport in TRANSPORTS:
        for ours_name, base_name, store in (("ours", "base", "memory"), ("ours-redis", "base-redis", "redis")):
            ours, base = summary.get(f"{ours_name}/{transport}"), summary.get(f"{base_name}/{transport}")
            if ours and base:
                ratios[f"{transport}_{store}_throughput_vs_base"] = ratio(ours["req_per_s"], base["req_per_s"])
                ratios[f"{transport}_{store}_cpu_per_call_vs_base"] = ratio(ours["cpu_us_per_call"],
                                                                          base["cpu_us_per_call"])
    return ratios


def verdicts(ratios: dict[str, float | None]) -> dict[str, bool | None]:
    """Whether each target of issue 7 is met (None when not measured)."""
    out: dict[str, bool | None] = {}
    for name, op, bound in TARGETS:
        value = ratios.get(name)
        out[f"{name} {op} {bound}"] = None if value is None else (value >= bound if op == ">=" else value <= bound)
    for transport in ("sse", "streamable"):
        value = ratios.get(f"{transport}_redis_2w_vs_1w")
        if value is not None:
            out[f"{transport}_redis_2w_vs_1w >= 1.0"] = value >= 1.0
    return out


def run_compare(args: Any) -> dict[str, Any]:
    """Run every (server, transport) pair `rounds` times, one after another; report medians and ratios."""
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    transports = [t.strip() for t in args.transports.split(",") if t.strip()]
    runs: dict[str, list[dict[str, Any]]] = {}
    with ExitStack() as stack:
        if any(name.endswith("-redis") for name in names):
            redis = redis_server()
            if redis is None:
                raise SystemExit("the -redis servers need redis-server on PATH")
            args.redis_url = stack.enter_context(redis).url
        return compare_rounds(args, names, transports, runs)


def compare_rounds(args: Any, names: list[str], transports: list[str],
                   runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The rounds of run_compare: in each, every transport and every server, one after another (paired runs)."""
    for round_number in range(1, args.rounds + 1):
        for transport in transports:
            for label, factory in server_factories(names, transport, args):
                key = f"{label}/{transport}"
                profile = None
                if args.profile and round_number == 1:
                    # Ours at PATH.<transport>, as before; any other server beside it at PATH.<label>.<transport>.
                    named = "" if label == "ours" else f".{label}"
                    profile = f"{args.profile}{named}.{transport}"
                report = measure(factory(), transport, args, profile)
                runs.setdefault(key, []).append(report)
                say(f"round {round_number} {key:<22} {report['req_per_s']:>8.1f} req/s  "
                    f"p99 {report['latency_ms']['p99']:>7.2f} ms  "
                    f"cpu {report.get('server_cpu_us_per_call', 0):>7.1f} us/call  errors {report['errors']}")
            if args.redis:
                run_redis_pair(transport, args, runs, round_number)
            for topology in topology_names(args):
                run_redis_topology(topology, transport, args, runs, round_number)
    summary = {key: median_of(reports) for key, reports in runs.items()}
    ratios = ratios_of(summary)
    report = {"mode": "compare", "concurrency": args.concurrency, "duration_s": args.duration,
              "rounds": args.rounds, "results": summary, "ratios": ratios, "targets": verdicts(ratios)}
    say_table(summary, ratios, report["targets"])
    if any(name in PAIRED for name in names):
        report["paired_round_ratios"] = paired_round_ratios(runs)
        for name, values in report["paired_round_ratios"].items():
            say(f"  {name:<48} by round: {values}")
    if topology_names(args):
        report["topology_round_ratios"] = topology_round_ratios(runs)
        say_topologies(summary, ratios, report["topology_round_ratios"])
    return report


def run_redis_pair(transport: str, args: Any, runs: dict[str, list[dict[str, Any]]], round_number: int) -> None:
    """Ours on the Redis store with one worker, then two."""
    redis = redis_server()
    if redis is None:
        say("redis: skipped (needs redis-server on PATH and flask_mcp_gevent/store/redis.py)")
        return
    with redis:
        for workers in (1, 2):
            server = our_server(workers, {**parse_env(args.server_env), "MCP_REDIS_URL": redis.url})
            server.name = f"ours-redis-{workers}w"
            report = measure(server, transport, args)
            key = f"ours-redis-{workers}w/{transport}"
            runs.setdefault(key, []).append(report)
            say(f"round {round_number} {key:<22} {report['req_per_s']:>8.1f} req/s  "
                f"p99 {report['latency_ms']['p99']:>7.2f} ms  errors {report['errors']}")


def topology_names(args: Any) -> list[str]:
    """The Redis topologies asked for with --redis-topology (none when not given)."""
    names = [n.strip() for n in (getattr(args, "redis_topology", None) or "").split(",") if n.strip()]
    unknown = [n for n in names if n not in TOPOLOGIES]
    if unknown:
        raise SystemExit(f"unknown Redis topology {unknown[0]!r}: choose from {', '.join(TOPOLOGIES)}")
    return names


def run_redis_topology(topology: str, transport: str, args: Any, runs: dict[str, list[dict[str, Any]]],
                       round_number: int) -> None:
    """Ours with one worker on the Redis store over a fresh topology (one Redis, Sentinel or Cluster)."""
    with redis_topology(topology) as redis:
        server = our_server(1, {**parse_env(args.server_env), **redis.env})
        server.name = f"ours-redis-{topology}"
        report = measure(server, transport, args)
    key = f"ours-redis-{topology}/{transport}"
    runs.setdefault(key, []).append(report)
    say(f"round {round_number} {key:<30} {report['req_per_s']:>8.1f} req/s  "
        f"p99 {report['latency_ms']['p99']:>7.2f} ms  "
        f"cpu {report.get('server_cpu_us_per_call', 0):>7.1f} us/call  errors {report['errors']}")


def topology_ratios(summary: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """Each topology's medians against ours on the in-memory store: throughput and server CPU per call."""
    ratios: dict[str, float | None] = {}
    for transport in TRANSPORTS:
        memory = summary.get(f"ours/{transport}")
        for topology in TOPOLOGIES:
            redis = summary.get(f"ours-redis-{topology}/{transport}")
            if memory and redis:
                ratios[f"{transport}_redis_{topology}_vs_memory"] = ratio(redis["req_per_s"], memory["req_per_s"])
                ratios[f"{transport}_redis_{topology}_cpu_per_call_vs_memory"] = ratio(
                    redis["cpu_us_per_call"], memory["cpu_us_per_call"])
    return ratios


def topology_round_ratios(runs: dict[str, list[dict[str, Any]]]) -> dict[str, list[float | None]]:
    """Each round's throughput ratio, topology against the in-memory run of the same round (the spread)."""
    spread: dict[str, list[float | None]] = {}
    for transport in TRANSPORTS:
        memory = runs.get(f"ours/{transport}", [])
        for topology in TOPOLOGIES:
            redis = runs.get(f"ours-redis-{topology}/{transport}", [])
            if memory and redis:
                spread[f"{transport}_redis_{topology}_vs_memory"] = [
                    ratio(r["req_per_s"], m["req_per_s"]) for m, r in zip(memory, redis, strict=True)]
    return spread


def paired_round_ratios(runs: dict[str, list[dict[str, Any]]]) -> dict[str, list[float | None]]:
    """Each round's server CPU per call, this tree against --base-tree in the same round (the spread)."""
    spread: dict[str, list[float | None]] = {}
    for transport in TRANSPORTS:
        for ours_name, base_name, store in (("ours", "base", "memory"), ("ours-redis", "base-redis", "redis")):
            ours, base = runs.get(f"{ours_name}/{transport}", []), runs.get(f"{base_name}/{transport}", [])
            if ours and base:
                spread[f"{transport}_{store}_cpu_per_call_vs_base"] = [
                    ratio(o.get("server_cpu_us_per_call"), b.get("server_cpu_us_per_call"))
                    for o, b in zip(ours, base, strict=True)]
    return spread


def say_topologies(summary: dict[str, dict[str, Any]], ratios: dict[str, Any],
                   spread: dict[str, list[float | None]]) -> None:
    """Print, per transport, each topology's throughput and CPU per call against the in-memory store."""
    say("")
    say(f"{'transport':<12}{'store':<10}{'req/s':>9}{'vs memory':>11}{'rounds':>22}{'cpu us/call':>13}"
        f"{'vs memory':>11}")
    for transport in TRANSPORTS:
        memory = summary.get(f"ours/{transport}")
        if memory is None:
            continue
        say(f"{transport:<12}{'memory':<10}{memory['req_per_s']:>9.1f}{'':>11}{'':>22}"
            f"{memory['cpu_us_per_call'] or 0:>13.1f}")
        for topology in TOPOLOGIES:
            row = summary.get(f"ours-redis-{topology}/{transport}")
            if row is None:
                continue
            name = f"{transport}_redis_{topology}"
            rounds = " ".join(f"{value}" for value in spread.get(f"{name}_vs_memory", []))
            say(f"{'':<12}{topology:<10}{row['req_per_s']:>9.1f}{ratios.get(f'{name}_vs_memory')!s:>11}"
                f"{rounds:>22}{row['cpu_us_per_call'] or 0:>13.1f}"
                f"{ratios.get(f'{name}_cpu_per_call_vs_memory')!s:>11}")


def say_table(summary: dict[str, dict[str, Any]], ratios: dict[str, Any], targets: dict[str, Any]) -> None:
    """Print the medians, the ratios and the verdicts for a person."""
    say("")
    say(f"{'server/transport':<32}{'req/s':>9}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'cpu us/call':>13}  errors")
    for key, row in summary.items():
        cpu = "-" if row["cpu_us_per_call"] is None else f"{row['cpu_us_per_call']:.1f}"
        say(f"{key:<32}{row['req_per_s']:>9.1f}{row['p50_ms']:>9.2f}{row['p90_ms']:>9.2f}{row['p99_ms']:>9.2f}"
            f"{cpu:>13}  {row['errors'] or ''}")
    for name, value in ratios.items():
        say(f"  {name:<48} {value}")
    for name, met in targets.items():
        say(f"  target {name:<36} {'met' if met else ('not measured' if met is None else 'NOT MET')}")


# idle sessions
async def hold_idle_sessions(server: ServerUnderTest, count: int, settle_s: float, timeout: float) -> dict[str, Any]:
    """Open count SSE sessions (with the handshake), measure the server's RSS growth, then close them."""
    errors: Counter = Counter()
    async with http_client() as http:
        warm = await open_sessions(http, "sse", server.base_url, server.paths, 20, timeout, errors)
        await asyncio.gather(*(s.close() for s in warm))
        await asyncio.sleep(settle_s)
        before = server.rss_bytes()
        started = time.perf_counter()
        sessions = await open_sessions(http, "sse", server.base_url, server.paths, count, timeout, errors)
        opened_s = time.perf_counter() - started
        await asyncio.sleep(settle_s)
        after = server.rss_bytes()
        # The sessions must still be alive at the end: one ping each proves the server kept them.
        alive = sum(await asyncio.gather(*(still_alive(s) for s in sessions[:200])))
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
    held = len(sessions)
    return {
        "server": server.name, "sessions_requested": count, "sessions_held": held,
        "open_s": round(opened_s, 2),
        "rss_before_mib": round(before / 2**20, 1), "rss_after_mib": round(after / 2**20, 1),
        "kib_per_session": round((after - before) / held / 1024, 2) if held else None,
        "alive_of_200_checked": alive, "errors": dict(errors),
    }


async def still_alive(session) -> int:
    """1 when the session still answers ping, else 0."""
    try:
        await session.call("ping", {})
        return 1
    except Exception:
        return 0


def run_idle(args: Any) -> dict[str, Any]:
    """Idle memory per SSE session for each requested server."""
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    # Every idle session comes from this one address: lift the per-address bounds with the total.
    room = str(max(10000, args.idle + 100))
    env = {"MCP_MAX_SESSIONS": room, "MCP_MAX_SESSIONS_PER_ADDRESS": room, "MCP_MAX_CONNECTIONS_PER_ADDRESS": room,
           **parse_env(args.server_env)}
    results = []
    for name in names:
        server = paired_factory(name, env, args)() if name == "base" else {
            "ours": lambda: our_server(1, env), "sdk": lambda: sdk_server("sse"), "floor": floor_server,
            "wsgi": wsgi_floor_server}[name]()
        server.name = name
        with server:
            result = asyncio.run(hold_idle_sessions(server, args.idle, 2.0, max(args.timeout, 30.0)))
        results.append(result)
        say(f"idle {result['server']:<10} held {result['sessions_held']}/{args.idle}  "
            f"{result['kib_per_session']} KiB/session  (RSS {result['rss_before_mib']} -> "
            f"{result['rss_after_mib']} MiB, opened in {result['open_s']} s)  errors {result['errors']}")
    ours = next((r for r in results if r["server"].startswith("ours")), None)
    target = None
    if ours is not None and ours["kib_per_session"] is not None:
        target = ours["kib_per_session"] <= IDLE_TARGET_KIB and ours["sessions_held"] == args.idle
    return {"mode": "idle", "sessions": args.idle, "results": results,
            "targets": {f"ours_kib_per_session <= {IDLE_TARGET_KIB} and all held": target}}

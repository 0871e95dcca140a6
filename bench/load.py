"""The benchmark's command line: load one server (bench/generator.py), compare several (bench/compare.py), or
pair ours with the WSGI floor (bench/floor.py).

    python -m bench.load --url http://127.0.0.1:8000/mcp --transport sse -c 32 -d 10
    python -m bench.load --compare --duration 10 --concurrency 32     # ours vs the SDK vs the floor
    python -m bench.load --compare --servers ours,sdk --transports streamable,stateless   # the 2026-07-28 row
    python -m bench.load --compare --servers ours,sdk,wsgi --transports stateless       # ... and the stack alone
    python -m bench.load --compare --servers ours --redis-topology single,sentinel,cluster   # Redis HA vs memory
    python -m bench.load --compare --servers ours,base,ours-redis,base-redis --base-tree ../before --rounds 5
                                                                      # a change against the commit before it
    python -m bench.load --idle 10000 --servers ours                  # memory per idle SSE session
    python -m bench.load --idle 1000 --servers wsgi,ours              # ... and the least the stack keeps per session
    python -m bench.load --floor --duration 10                        # ours vs the WSGI floor, paired, 5 rounds

A plain run prints one JSON line: req/s, p50/p90/p99 latency and errors by kind.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
from urllib.parse import urlsplit

import orjson

from bench import compare, floor
from bench.generator import run_load
from bench.servers import cpu_seconds_of

__all__ = ["main"]


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
    mode.add_argument("--floor", action="store_true",
                      help="ours against the WSGI floor (gunicorn + gevent alone), alternating in each round, on "
                           "the 2026-07-28 wire and Streamable HTTP: median CPU per call, ratio and spread")
    parser.add_argument("--url", help="server to load (plain mode), e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument("--transport", choices=("sse", "streamable", "stateless"), default="sse",
                        help="stateless: stateless 2026-07-28 POSTs (headers and _meta on every call, no session)")
    parser.add_argument("-c", "--concurrency", type=int, default=32, help="sessions, each with one call in flight")
    parser.add_argument("-d", "--duration", type=float, default=10.0, help="measured seconds per run")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each run")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a call counts as timed out")
    parser.add_argument("--server-pid", type=int, action="append", default=[],
                        help="plain mode: PIDs whose CPU time to charge per call (children included)")
    parser.add_argument("--servers", default="ours,sdk,floor",
                        help="compare/idle: which servers, comma-separated (ours, sdk, floor; "
                             "wsgi: gunicorn + gevent alone, stateless and streamable; with --idle, legacy SSE)")
    parser.add_argument("--transports",
                        help="compare: which transports (sse, streamable, stateless; default sse,streamable); "
                             "floor: stateless, streamable (default both)")
    parser.add_argument("--rounds", type=int, help="compare, floor: repeat and report medians (default 1; floor 5)")
    parser.add_argument("--redis", action="store_true",
                        help="compare: add ours on the Redis store with 1 and 2 workers (needs redis-server)")
    parser.add_argument("--redis-topology", metavar="NAMES",
                        help="compare: add ours (1 worker) on the Redis store over each named topology, started "
                             "afresh for each run: single (one redis-server), sentinel (a master, a replica, three "
                             "Sentinels), cluster (three masters); e.g. single,sentinel,cluster")
    parser.add_argument("--base-tree", metavar="DIR",
                        help="compare: a checkout of the commit before a change (git worktree add DIR COMMIT); the "
                             "servers base and base-redis run it with this venv, beside ours and ours-redis, in "
                             "alternating runs of each round; floor: base runs between ours and the floor")
    parser.add_argument("--profile", metavar="PATH",
                        help="compare: record each server with py-spy in the first round (collapsed stacks: ours "
                             "to PATH.<transport>, another to PATH.<server>.<transport>)")
    parser.add_argument("--server-env", action="append", default=[], metavar="MCP_X=V",
                        help="compare/idle/floor: extra environment for our server")
    args = parser.parse_args(argv)
    if not (args.compare or args.idle or args.floor) and not args.url:
        parser.error("give --url, --compare, --floor or --idle N")
    if args.transports is None:
        args.transports = "stateless,streamable" if args.floor else "sse,streamable"
    if args.rounds is None:
        args.rounds = 5 if args.floor else 1
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the chosen mode and print its JSON line."""
    args = parse_args(argv)
    raise_fd_limit()
    if args.floor:
        report = floor.run_floor(args)
    elif args.compare or args.idle:
        report = compare.run_compare(args) if args.compare else compare.run_idle(args)
    else:
        base, paths = split_url(args.url, args.transport)
        probe = (lambda: cpu_seconds_of(args.server_pid)) if args.server_pid else None
        report = asyncio.run(run_load(base, args.transport, args.concurrency, args.duration, paths=paths,
                                      warmup=args.warmup, timeout=args.timeout, probe=probe))
    sys.stdout.write(orjson.dumps(report).decode() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

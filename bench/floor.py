"""Ours against the WSGI floor, paired round by round: server CPU per call and how many times the floor's it is.

`python -m bench.load --floor` runs, in each round and on each wire, ours then the WSGI floor
(bench/peers/wsgi_floor.py: a plain WSGI function under the same gunicorn + gevent worker), each started
afresh; with --base-tree a checkout of another commit runs between them (ours, base, floor). The report gives
per wire the median CPU µs per call of each side, the ratio of the medians, each round's own ratio and their
spread (min..max), since on a shared machine one round says little and a pair of neighbours says more.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.compare import measure, parse_env, ratio, say
from bench.servers import ServerUnderTest, our_server, wsgi_floor_server

__all__ = ["FLOOR_TARGET", "pair_statistics", "run_floor", "sides_of"]

# Issue 40: a call at most 1.5 times the CPU of the bare WSGI function, on the 2026-07-28 wire and Streamable HTTP.
FLOOR_TARGET = 1.5
FLOOR_WIRES = ("stateless", "streamable")


def median_or_none(values: list[float | None]) -> float | None:
    """The median of the values that were measured, or None when none was."""
    measured = [value for value in values if value is not None]
    return round(statistics.median(measured), 1) if measured else None


def pair_statistics(ours: list[float | None], theirs: list[float | None]) -> dict[str, Any]:
    """Two sides' CPU per call, round by round: both medians, their ratio, each round's ratio and the spread."""
    if len(ours) != len(theirs):
        raise ValueError(f"paired rounds must match: {len(ours)} against {len(theirs)}")
    rounds = [ratio(a, b) for a, b in zip(ours, theirs, strict=True)]
    measured = [value for value in rounds if value is not None]
    ours_median, theirs_median = median_or_none(ours), median_or_none(theirs)
    return {
        "ours_cpu_us_per_call": ours_median,
        "theirs_cpu_us_per_call": theirs_median,
        "ratio": ratio(ours_median, theirs_median),
        "median_round_ratio": round(statistics.median(measured), 3) if measured else None,
        "round_ratios": rounds,
        "spread": [min(measured), max(measured)] if measured else None,
    }


def sides_of(args: Any) -> list[tuple[str, Callable[[], ServerUnderTest]]]:
    """The servers of each round, in the order they run: ours, base when --base-tree is given, the floor."""
    env = parse_env(args.server_env)
    sides: list[tuple[str, Callable[[], ServerUnderTest]]] = [("ours", lambda: our_server(1, env))]
    if args.base_tree:
        tree = Path(args.base_tree).resolve()
        sides.append(("base", lambda: our_server(1, env, tree)))
    sides.append(("floor", wsgi_floor_server))
    return sides


def wire_report(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """One wire's rounds summed up: each side's medians, ours (and base) against the floor, ours against base."""
    cpu = {side: [r.get("server_cpu_us_per_call") for r in reports] for side, reports in runs.items()}
    floor = pair_statistics(cpu["ours"], cpu["floor"])
    report: dict[str, Any] = {
        "ours_cpu_us_per_call": floor["ours_cpu_us_per_call"],
        "floor_cpu_us_per_call": floor["theirs_cpu_us_per_call"],
        "ratio": floor["ratio"], "median_round_ratio": floor["median_round_ratio"],
        "round_ratios": floor["round_ratios"], "spread": floor["spread"],
        "cpu_us_per_call_by_round": cpu,
        "req_per_s": {side: median_or_none([r["req_per_s"] for r in reports]) for side, reports in runs.items()},
        "errors": {side: dict(sum((Counter(r["errors"]) for r in reports), Counter()))
                   for side, reports in runs.items()},
    }
    if "base" in cpu:
        report["base_cpu_us_per_call"] = median_or_none(cpu["base"])
        report["base_vs_floor"] = pair_statistics(cpu["base"], cpu["floor"])
        report["ours_vs_base"] = pair_statistics(cpu["ours"], cpu["base"])
    return report


def run_floor(args: Any) -> dict[str, Any]:
    """Every round, on every wire: each side once, one after another; report the paired CPU per call."""
    wires = [t.strip() for t in args.transports.split(",") if t.strip()]
    unknown = [wire for wire in wires if wire not in FLOOR_WIRES]
    if unknown:
        raise SystemExit(f"the WSGI floor has no {unknown[0]!r} wire: choose from {', '.join(FLOOR_WIRES)}")
    sides = sides_of(args)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {wire: {name: [] for name, _ in sides} for wire in wires}
    for round_number in range(1, args.rounds + 1):
        for wire in wires:
            for name, factory in sides:
                report = measure(factory(), wire, args)
                runs[wire][name].append(report)
                say(f"round {round_number} {wire:<11} {name:<6} {report['req_per_s']:>8.1f} req/s  "
                    f"cpu {report.get('server_cpu_us_per_call', 0):>7.1f} us/call  errors {report['errors']}")
    wire_reports = {wire: wire_report(runs[wire]) for wire in wires}
    for wire, row in wire_reports.items():
        say(f"{wire:<11} ours {row['ours_cpu_us_per_call']} us/call, floor {row['floor_cpu_us_per_call']} us/call: "
            f"ratio {row['ratio']} (rounds {row['round_ratios']}, spread {row['spread']})")
        if "ours_vs_base" in row:
            say(f"{'':<11} base {row['base_cpu_us_per_call']} us/call: ours/base {row['ours_vs_base']['ratio']} "
                f"(rounds {row['ours_vs_base']['round_ratios']}), base/floor {row['base_vs_floor']['ratio']}")
    targets = {f"{wire} ours/floor <= {FLOOR_TARGET}": (None if row["ratio"] is None else row["ratio"] <= FLOOR_TARGET)
               for wire, row in wire_reports.items()}
    return {"mode": "floor", "concurrency": args.concurrency, "duration_s": args.duration, "rounds": args.rounds,
            "wires": wire_reports, "targets": targets}

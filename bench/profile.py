"""Summarise a py-spy collapsed-stack file: where the samples are, by self and by inclusive time, and by module.

    python -m bench.load --compare --servers ours --transports sse --duration 10 --profile /tmp/ours
    python -m bench.profile /tmp/ours.sse [--top 25] [--match flask_mcp_gevent]
    python -m bench.profile /tmp/ours.sse --under Logger.info      # only the samples inside one function
    python -m bench.profile /tmp/ours.sse --modules                # self time by module, its top functions under it
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import PurePosixPath

__all__ = ["module_of", "read_stacks", "summarize_modules", "summarize_stacks", "under"]

FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:]*?)(?::\d+)?\)$")
NAMED = re.compile(r"^.*? \((?P<file>.*)\)$")


def frame_name(frame: str) -> str:
    """`func (pkg/file.py:12)` -> `func (pkg/file.py)`, so lines of one function add up."""
    match = FRAME.match(frame)
    if match is None:
        return frame
    return f"{match['func']} ({match['file']})"


def module_of(name: str) -> str:
    """The module of a folded frame: `Request.parse (gunicorn/http/message.py)` -> `gunicorn.http.message`."""
    match = NAMED.match(name)
    if match is None:
        return name
    path = PurePosixPath(match["file"])
    if path.suffix != ".py":
        return str(path)  # <string>, <frozen ...>: code without a file
    parts = path.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_stacks(path: str) -> list[tuple[list[str], int]]:
    """Parse `frame;frame;frame count` lines."""
    stacks = []
    with open(path) as lines:
        for line in lines:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if stack and count.isdigit():
                stacks.append(([frame_name(f) for f in stack.split(";")], int(count)))
    return stacks


def under(stacks: list[tuple[list[str], int]], text: str) -> list[tuple[list[str], int]]:
    """Only the stacks that pass through a frame containing text, cut to start at its outermost such frame."""
    kept = []
    for frames, count in stacks:
        for depth, name in enumerate(frames):
            if text in name:
                kept.append((frames[depth:], count))
                break
    return kept


def summarize_stacks(stacks: list[tuple[list[str], int]]) -> tuple[int, Counter[str], Counter[str]]:
    """Total samples, samples per leaf frame (self), samples per frame anywhere on the stack (inclusive)."""
    total = 0
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for frames, count in stacks:
        total += count
        own[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count
    return total, own, inclusive


def summarize_modules(own: Counter[str]) -> list[tuple[str, int, list[tuple[str, int]]]]:
    """Self samples per module, most first, each with its functions' self samples, most first."""
    by_module: dict[str, Counter[str]] = {}
    for name, count in own.items():
        by_module.setdefault(module_of(name), Counter())[name] += count
    rows = [(module, sum(functions.values()), functions.most_common()) for module, functions in by_module.items()]
    return sorted(rows, key=lambda row: -row[1])


def print_modules(total: int, own: Counter[str], top: int) -> None:
    """The top modules by self time, with each one's functions that are among the top self-time functions."""
    leaders = {name for name, _ in own.most_common(top)}
    print(f"\nself time by module, top {top} (functions among the top {top} listed under their module)")
    for module, count, functions in summarize_modules(own)[:top]:
        print(f"  {100.0 * count / total:5.1f}%  {module}")
        for name, samples in functions:
            if name in leaders:
                print(f"           {100.0 * samples / total:5.1f}%  {name}")


def main(argv: list[str] | None = None) -> int:
    """Print the top self and inclusive frames (and the modules' self time with --modules)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--match", default="", help="inclusive table: only frames whose text contains this")
    parser.add_argument("--under", default="", help="only the samples inside a frame whose text contains this "
                                                    "(percentages stay of every sample)")
    parser.add_argument("--modules", action="store_true", help="add self time by module")
    args = parser.parse_args(argv)
    stacks = read_stacks(args.path)
    everything = sum(count for _, count in stacks)
    if args.under:
        stacks = under(stacks, args.under)
    total, own, inclusive = summarize_stacks(stacks)
    print(f"{total} samples" + (f" of {everything} inside {args.under!r}" if args.under else ""))
    print("\nself (leaf) time")
    for name, count in own.most_common(args.top):
        print(f"  {100.0 * count / everything:5.1f}%  {name}")
    print("\ninclusive time")
    shown = 0
    for name, count in inclusive.most_common():
        if args.match in name:
            print(f"  {100.0 * count / everything:5.1f}%  {name}")
            shown += 1
            if shown >= args.top:
                break
    if args.modules:
        print_modules(everything, own, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())

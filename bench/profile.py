"""Summarise a py-spy collapsed-stack file: where the samples are, by self and by inclusive time.

    python -m bench.load --compare --servers ours --transports sse --duration 10 --profile /tmp/ours
    python -m bench.profile /tmp/ours.sse [--top 25] [--match flask_mcp_gevent]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

__all__ = ["read_stacks", "summarize_stacks"]

FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:]*?)(?::\d+)?\)$")


def frame_name(frame: str) -> str:
    """`func (path/to/file.py:12)` -> `func (file.py)`, so lines of one function add up."""
    match = FRAME.match(frame)
    if match is None:
        return frame
    return f"{match['func']} ({Path(match['file']).name})"


def read_stacks(path: str) -> list[tuple[list[str], int]]:
    """Parse `frame;frame;frame count` lines."""
    stacks = []
    for line in Path(path).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append(([frame_name(f) for f in stack.split(";")], int(count)))
    return stacks


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


def main(argv: list[str] | None = None) -> int:
    """Print the top self and inclusive frames."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--match", default="", help="inclusive table: only frames whose text contains this")
    args = parser.parse_args(argv)
    total, own, inclusive = summarize_stacks(read_stacks(args.path))
    print(f"{total} samples")
    print("\nself (leaf) time")
    for name, count in own.most_common(args.top):
        print(f"  {100.0 * count / total:5.1f}%  {name}")
    print("\ninclusive time")
    shown = 0
    for name, count in inclusive.most_common():
        if args.match in name:
            print(f"  {100.0 * count / total:5.1f}%  {name}")
            shown += 1
            if shown >= args.top:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())

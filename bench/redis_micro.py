"""CPU cost of the Redis store's per-call work, in-process, against a throwaway redis-server (no HTTP, no generator).

    python -m bench.redis_micro [--calls 4000] [--rounds 5] [--count] [--topologies single,sentinel,cluster]

32 greenlets, one session each, do back to back what one `tools/call` asks of the hub: on legacy SSE the session
lookup, the call slot taken and given back, the answer delivered and read from the session's stream; on
Streamable HTTP the lookup and the slot. Each line is this process's CPU microseconds per call for each round and
their minimum: the machine's other load inflates every round, the minimum least. Compare two trees in one
sitting (run it from each); the memory store's lines show the floor. With --count, each line is instead what one
call does, counted rather than timed (function calls, Python and C, and greenlet switches): a shared machine's
speed changes by tens of percent within minutes, a count does not. --topologies runs the Redis store on one Redis
(`single`, the default), on a master with a replica and three Sentinels (`sentinel`), and on a three-master Redis
Cluster (`cluster`), each started for the run; the last two send through redis-py's client, not the multiplexer.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import inspect
import resource
import shutil
import sys
from collections.abc import Iterator
from typing import Any

from gevent import monkey

monkey.patch_all()

import gevent  # noqa: E402
import greenlet  # noqa: E402

from bench.redis_topologies import redis_topology  # noqa: E402
from flask_mcp_gevent.config import Settings  # noqa: E402
from flask_mcp_gevent.session import Session  # noqa: E402
from flask_mcp_gevent.store import create_store  # noqa: E402
from flask_mcp_gevent.store.redis import RedisStore  # noqa: E402

__all__ = ["main"]

SESSIONS = 32
SLOT_LIMIT = 64
ANSWER = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hello"}]}}


def cpu_seconds() -> float:
    """This process's user plus system CPU time."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def ports_of(store: Any) -> tuple[Any, Any]:
    """(sessions, event log) of a store with ports, or the hub itself twice on a tree from before them."""
    if hasattr(store, "events"):
        return store.sessions, store.events
    return store, store


def sse_call(store: Any, session: Session, stream: Any) -> None:
    """What a legacy SSE tools/call asks of the store, the answer read back from the stream."""
    hub, events = ports_of(store)
    token = lookup_with_slot(store, session)
    # As the server gives it back, before the answer is stored (an older tree: ahead of it, in its write).
    if gives_back_ahead_of_the_answer(hub):
        hub.sessions.give_back_call_slot(session.id, token, answer_follows=True)
    else:
        hub.sessions.give_back_call_slot(session.id, token)
    if hasattr(hub, "deliver_later"):  # as the legacy transport stored it on some trees: without waiting (else deliver)
        hub.deliver_later(session.id, ANSWER)
        if hasattr(hub, "free_held_slot"):
            hub.free_held_slot()
    else:
        events.deliver(session.id, ANSWER)
    while stream.get(5) is None:
        pass


def gives_back_ahead_of_the_answer(hub: Any, known: dict[type, bool] = {}) -> bool:  # noqa: B006 (a cache)
    """Whether this tree's hub sends a slot's release with the answer (asked once per hub class, not per call)."""
    kind = type(hub)
    if kind not in known:
        known[kind] = "answer_follows" in inspect.signature(hub.sessions.give_back_call_slot).parameters
    return known[kind]


def streamable_call(store: Any, session: Session, stream: Any) -> None:
    """What a Streamable HTTP tools/call answered as JSON asks of the store."""
    token = lookup_with_slot(store, session)
    ports_of(store)[0].give_back_call_slot(session.id, token)


def lookup_with_slot(store: Any, session: Session) -> str:
    """The session looked up for one tools/call and the call's slot, as the transports and server do."""
    hub = ports_of(store)[0]
    token = None
    if hasattr(hub, "get_session_for_call"):  # an older tree: the slot with the lookup where it can
        _, token = hub.get_session_for_call(session.id, session.transport, session.principal, SLOT_LIMIT)
    else:
        hub.sessions.get_session(session.id, accept=lambda stored: True)
    if token is None:
        token = hub.sessions.take_call_slot(session.id, SLOT_LIMIT)
    else:
        hub.hold_call_slot(session.id, token)
    return token


def per_call_us(hub: Any, call: Any, calls: int, rounds: int) -> list[float]:
    """CPU microseconds per call, one figure per round, after a warm-up."""
    sessions = []
    store_sessions, events = ports_of(hub)
    for _ in range(SESSIONS):
        session = Session(protocol_version="2025-06-18")
        store_sessions.create_session(session)
        sessions.append((session, events.subscribe(session.id)))

    def run(each: int) -> None:
        gevent.joinall([gevent.spawn(lambda s=s, t=t: [call(hub, s, t) for _ in range(each)]) for s, t in sessions])

    run(20)
    figures = []
    for _ in range(rounds):
        started = cpu_seconds()
        run(calls // SESSIONS)
        figures.append((cpu_seconds() - started) / (calls // SESSIONS * SESSIONS) * 1e6)
    for session, stream in sessions:
        stream.close()
        store_sessions.close_session(session.id)
    return figures


def counted_per_call(hub: Any, call: Any, calls: int) -> dict[str, float]:
    """Function calls (Python, C) and greenlet switches per call, over one round of calls."""
    counts: collections.Counter = collections.Counter()

    def on_call(frame: Any, event: str, arg: Any) -> None:
        counts[event] += 1

    def on_switch(event: str, args: Any) -> None:
        counts["switch"] += 1

    def counting_round(each: int) -> None:
        sys.setprofile(on_call)
        threading_profile = greenlet.settrace(on_switch)
        try:
            per_call_us(hub, call, each * SESSIONS, 1)
        finally:
            sys.setprofile(None)
            greenlet.settrace(threading_profile)

    counting_round(10)  # the first round connects and loads scripts: not counted
    counts.clear()
    each = calls // SESSIONS
    counting_round(each)
    done = each * SESSIONS + 20 * SESSIONS  # per_call_us warms up with 20 calls a session first
    return {"python calls": counts["call"] / done, "C calls": counts["c_call"] / done,
            "switches": counts["switch"] / done}


@contextlib.contextmanager
def redis_environ(topology: str) -> Iterator[dict[str, str]]:
    """The settings of a Redis store on a throwaway Redis of this topology (single, sentinel or cluster)."""
    with redis_topology(topology) as redis:
        yield redis.env


def report(backend: str, hub: Any, count: bool, calls: int, rounds: int) -> None:
    """Print one line per wire: CPU µs per call, or the calls and switches counted per call."""
    for wire, call in (("sse", sse_call), ("streamable", streamable_call)):
        if count:
            counted = counted_per_call(hub, call, calls)
            print(f"{backend:<9} {wire:<11} " + "  ".join(f"{v:7.1f} {k}" for k, v in counted.items())
                  + " per call")
            continue
        figures = per_call_us(hub, call, calls, rounds)
        print(f"{backend:<9} {wire:<11} " + " ".join(f"{figure:6.0f}" for figure in figures)
              + f"   min {min(figures):6.0f} us/call")


def main(argv: list[str] | None = None) -> int:
    """Print CPU µs per call of each wire's hub work, on the memory store and on the Redis store."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", action="store_true", help="count function calls and switches, not time")
    parser.add_argument("--topologies", default="single", help="comma-separated: single, sentinel, cluster")
    args = parser.parse_args(argv)
    topologies = args.topologies.split(",")
    if shutil.which("redis-server") is None:
        print("needs redis-server on PATH", file=sys.stderr)
        return 1
    report("memory", create_store(Settings.from_environ({})), args.count, args.calls, args.rounds)
    for topology in topologies:
        with redis_environ(topology) as environ:
            hub: Any = create_store(Settings.from_environ(environ))
            getattr(hub, "fleet", hub).prepare()
            try:
                report("redis" if topology == "single" else topology, hub, args.count, args.calls, args.rounds)
            finally:
                if isinstance(hub, RedisStore):
                    hub.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

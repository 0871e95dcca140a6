"""The credentials a host app's MCP keeps per principal for its route tools: bounded in number and in bytes."""

from __future__ import annotations

import tracemalloc

from flask_mcp_gevent.web.callers import CallerCredentials

COOKIE = "session=" + "x" * 8000  # about what gunicorn lets one header carry


def request_of(cookie: str = COOKIE) -> dict[str, str]:
    """A WSGI environ's credential headers."""
    return {"HTTP_AUTHORIZATION": "Bearer token", "HTTP_COOKIE": cookie}


def test_the_kept_bytes_stay_under_the_bound_and_the_memory_with_them():
    max_bytes = 1 << 20
    kept = CallerCredentials(limit=100_000, max_bytes=max_bytes)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(2000):  # about 16 MiB of headers offered
            kept.remember(f"principal-{number}", request_of(COOKIE + str(number)))
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept.held_bytes <= max_bytes
    assert grown < 2 * max_bytes, grown  # the headers, plus what the dicts and strings cost around them
    assert "principal-1999" in kept.latest and "principal-0" not in kept.latest  # the oldest went first


def test_the_count_is_bounded_and_the_oldest_forgotten_first():
    kept = CallerCredentials(limit=3, max_bytes=1 << 20)
    for name in ("a", "b", "c", "a", "d"):
        kept.remember(name, request_of("c=1"))
    assert list(kept.latest) == ["c", "a", "d"]
    assert kept.headers_of("b") == {}


def test_a_principal_whose_headers_alone_exceed_the_bound_is_not_kept_and_its_old_ones_go():
    kept = CallerCredentials(limit=10, max_bytes=4000)
    kept.remember("alice", request_of("c=1"))
    kept.remember("alice", request_of())
    assert kept.headers_of("alice") == {} and kept.held_bytes == 0


def test_an_anonymous_caller_is_never_kept():
    kept = CallerCredentials(limit=10, max_bytes=4000)
    kept.remember(None, request_of("c=1"))
    assert kept.latest == {} and kept.headers_of(None) == {}

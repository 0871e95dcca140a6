"""What nginx does in front of two hosts, for the rolling-restart test: round robin, the next host on refusal.

nginx with two `server` lines in an `upstream` passes a request to the next one when it cannot connect
(`proxy_next_upstream error`, its default); so does `Balancer`, which also keeps every status it passed
on, so the test can say that no client saw a 5xx. Its connections stay idle at most 1 s, as
`deploy/nginx/mcp-server.conf` keeps its upstream pool (gunicorn closes them after 2 s).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Any

import httpx

from tests.e2e.server_process import ServerProcess

__all__ = ["Balancer", "NoHostAnswered", "http_client"]

READ_TIMEOUT_S = 20.0
IDLE_CONNECTION_S = 1.0


class NoHostAnswered(AssertionError):
    """Every host refused the connection."""


def http_client() -> httpx.Client:
    """A client whose reads are bounded and whose idle connections close before gunicorn's keep-alive does."""
    return httpx.Client(timeout=httpx.Timeout(READ_TIMEOUT_S, connect=5.0),
                        limits=httpx.Limits(keepalive_expiry=IDLE_CONNECTION_S))


class Balancer:
    """Round robin over hosts; a refused connection goes to the next host; every status it saw is kept."""

    def __init__(self, hosts: Sequence[ServerProcess]) -> None:
        self.hosts = list(hosts)
        self.turns = itertools.count()
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str, int]] = []

    def order(self, pin: ServerProcess | None) -> list[ServerProcess]:
        """The hosts to try, in order: the pinned one first, else the next in the round."""
        if pin is not None:
            return [pin, *(host for host in self.hosts if host is not pin)]
        with self.lock:
            start = next(self.turns) % len(self.hosts)
        return self.hosts[start:] + self.hosts[:start]

    def send(self, http: httpx.Client, method: str, path: str, *, pin: ServerProcess | None = None,
             stream: bool = False, **kwargs: Any) -> httpx.Response:
        """Send to the first host that accepts the connection; NoHostAnswered when none does."""
        for host in self.order(pin):
            request = http.build_request(method, host.base_url + path, **kwargs)
            try:
                response = http.send(request, stream=stream)
            except httpx.ConnectError:
                continue
            with self.lock:
                self.seen.append((method, path.split("?", 1)[0], response.status_code))
            return response
        raise NoHostAnswered(f"{method} {path}: every host refused the connection")

    def server_errors(self) -> list[tuple[str, str, int]]:
        """Every (method, path, status) passed on with a 5xx status."""
        with self.lock:
            return [seen for seen in self.seen if seen[2] >= 500]

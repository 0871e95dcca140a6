"""Slow request bodies on a real gunicorn: they time out (408), and one address cannot hold the worker.

A client that sends its headers and then trickles the body gets 408 after MCP_BODY_TIMEOUT_S. Past
MCP_MAX_CONNECTIONS_PER_ADDRESS requests in progress, an address gets 429 at once, while a client from
another address (Linux routes all of 127.0.0.0/8 to lo) is served as usual.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.raw_clients import BOTH, initialize
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e

BODY_TIMEOUT_S = 4.0
PER_ADDRESS = 3
SLOW_CLIENTS = 6
VERSION = "2025-06-18"
# Every read of a raw socket gives up after this; a slow body must be answered well inside it.
ANSWER_WITHIN_S = 20.0


@pytest.fixture(scope="module", params=["hot path", "flask route"])
def server(request) -> Iterator[ServerProcess]:
    """One worker with a short body timeout and a small bound of requests in progress per address.

    A CORS setting makes Flask serve the POSTs instead of the WSGI hot path: both read bodies alike.
    """
    env = {"MCP_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S), "MCP_MAX_CONNECTIONS_PER_ADDRESS": str(PER_ADDRESS)}
    if request.param == "flask route":
        env["MCP_CORS_ORIGINS"] = "https://example.invalid"
    with ServerProcess(env=env) as process:
        yield process


class SlowBody:
    """A raw connection that sends a POST's headers, announcing a megabyte, then a few bytes of body."""

    def __init__(self, server: ServerProcess, source: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=ANSWER_WITHIN_S,
                                             source_address=(source, 0))
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
                f"Accept: {BOTH}\r\nContent-Length: 1000000\r\n\r\n")
        self.sock.sendall(head.encode() + b'{"jsonrpc": "2.0", ')

    def trickle(self) -> None:
        """Send one more byte of the body, as a slow client does; the server may have closed already."""
        try:
            self.sock.sendall(b" ")
        except OSError:
            pass

    def answer(self) -> tuple[int, dict]:
        """Read the response: its status and JSON body (raises socket.timeout past ANSWER_WITHIN_S)."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(rest) < length:
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return int(head.split(b" ", 2)[1]), json.loads(rest[:length])

    def close(self) -> None:
        """Drop the connection."""
        self.sock.close()


def initialize_from(server: ServerProcess, source: str) -> httpx.Response:
    """POST initialize on a new connection from source."""
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=httpx.Timeout(15.0, connect=5.0)) as http:
        return http.post(server.url, json=initialize(VERSION), headers={"Accept": BOTH})


def test_a_body_that_does_not_arrive_gets_408_with_a_json_rpc_error(server):
    slow = SlowBody(server)
    try:
        slow.sock.settimeout(0.5)
        deadline = time.monotonic() + ANSWER_WITHIN_S
        answer = None
        while answer is None and time.monotonic() < deadline:
            slow.trickle()
            try:
                answer = slow.answer()
            except TimeoutError:
                continue
        assert answer is not None, "no answer to a slow body"
        status, body = answer
        assert status == 408
        assert body["error"]["code"] == -32600
        assert "MCP_BODY_TIMEOUT_S" in body["error"]["message"]
    finally:
        slow.close()


def test_slow_clients_past_the_bound_are_refused_while_another_address_is_served(server):
    slow = []
    try:
        for _ in range(SLOW_CLIENTS):
            slow.append(SlowBody(server))
            time.sleep(0.1)  # each is in progress before the next arrives
        # While the first PER_ADDRESS hold their requests, the rest were refused at once.
        refused = [client.answer() for client in slow[PER_ADDRESS:]]
        assert [status for status, _ in refused] == [429] * (SLOW_CLIENTS - PER_ADDRESS)
        assert all("MCP_MAX_CONNECTIONS_PER_ADDRESS" in body["error"]["message"] for _, body in refused)
        # Their address is still at its bound; another address is not.
        assert initialize_from(server, "127.0.0.1").status_code == 429
        assert initialize_from(server, "127.0.0.2").status_code == 200
        # The held ones time out, and their address is served again.
        held = [client.answer() for client in slow[:PER_ADDRESS]]
        assert [status for status, _ in held] == [408] * PER_ADDRESS
        assert initialize_from(server, "127.0.0.1").status_code == 200
    finally:
        for client in slow:
            client.close()

"""subscriptions/listen bounded in bytes against a real gunicorn: the request, the queue of an unread stream, taskIds.

Memory is the worker's resident set (VmRSS); Redis cost is `INFO commandstats` of a real redis-server.
Every stream here is a raw socket with a tiny receive buffer that is read only as far as a test needs.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

import httpx
import pytest

from tests.e2e.server_process import ServerProcess
from tests.e2e.stateless_client import stateless_headers, stateless_meta, stateless_request
from tests.e2e.test_redis_faults import worker_rss_kib
from tests.e2e.test_slow_consumer import read_until_closed
from tests.redis_server import redis_server  # noqa: F401  (fixture)
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

ACKNOWLEDGED = b"notifications/subscriptions/acknowledged"
TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
WAIT_S = 20.0
MIB = 1024


class RawListen:
    """A subscriptions/listen POSTed on a socket with a 4 KiB receive buffer, read only as far as asked."""

    def __init__(self, server: ServerProcess, listen_id: Any, params: dict[str, Any],
                 capabilities: dict[str, Any] | None = None) -> None:
        message = stateless_request("subscriptions/listen", params, request_id=listen_id,
                                 meta=stateless_meta(
                                     **{"io.modelcontextprotocol/clientCapabilities": capabilities or {}}))
        body = json.dumps(message).encode()
        head = "".join(f"{name}: {value}\r\n" for name, value in stateless_headers(message).items())
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(WAIT_S)
        self.sock.connect(("127.0.0.1", server.port))
        self.sock.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Length: {len(body)}\r\n"
                          f"{head}\r\n".encode() + body)
        self.seen = b""
        self.read_until(b"\r\n\r\n")
        self.status = int(self.seen.split(b" ", 2)[1])

    def read_until(self, marker: bytes, start: int = 0) -> bytes:
        """Read until marker has arrived after start (failing if the connection ends first); return all read."""
        while marker not in self.seen[start:]:
            chunk = self.sock.recv(4096)
            assert chunk, f"the connection ended before {marker!r}: {self.seen[-300:]!r}"
            self.seen += chunk
        return self.seen

    def acknowledgment(self) -> dict[str, Any]:
        """The stream's first event, the acknowledgment, once it has arrived whole."""
        at = self.read_until(ACKNOWLEDGED).index(ACKNOWLEDGED)
        self.read_until(b"\n\n", at)
        line = self.seen[self.seen.rindex(b"data: ", 0, at):].split(b"\n", 1)[0]
        return json.loads(line[6:])

    def close(self) -> None:
        """Close the connection (the specification's cancellation on HTTP)."""
        self.sock.close()


def call(server: ServerProcess, name: str, arguments: dict[str, Any],
         capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """One 2026-07-28 tools/call answered as JSON; its result."""
    body = stateless_request("tools/call", {"name": name, "arguments": arguments},
                          meta=stateless_meta(
                                     **{"io.modelcontextprotocol/clientCapabilities": capabilities or {}}))
    response = httpx.post(server.url, json=body, headers=stateless_headers(body), timeout=WAIT_S)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def open_request_streams(server: ServerProcess) -> float:
    """The mcp_open_streams gauge for 2026-07-28 request streams (listens included), from /metrics."""
    for line in httpx.get(server.base_url + "/metrics", timeout=WAIT_S).text.splitlines():
        if line.startswith("mcp_open_streams") and 'kind="request"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_listen_requests_past_the_byte_bound_are_refused_and_a_principals_listens_stay_small():
    with ServerProcess(env={"MCP_KEEPALIVE_S": "5"}) as server:
        worker = server.worker_pids()[0]
        baseline = worker_rss_kib(worker)
        listens: list[RawListen] = []
        try:
            # As the attack was measured: 3.6 MB filters of 1,000 URIs, never read.
            for n in range(20):
                uris = [f"test://huge/{n}/{i}/" + "u" * 3600 for i in range(1000)]
                listens.append(RawListen(server, f"huge-{n}", {"notifications": {"resourceSubscriptions": uris}}))
            # Then the principal's whole allowance of streams, each just under MCP_LISTEN_MAX_BYTES, unread.
            for n in range(100):
                uris = [f"test://near/{n}/{i}/" + "u" * 2000 for i in range(7)]  # about 14 kB: under the 16 KiB default
                listens.append(RawListen(server, f"near-{n}", {"notifications": {"resourceSubscriptions": uris}}))
            grown = worker_rss_kib(worker) - baseline
            huge, near = listens[:20], listens[20:]
            assert grown < 64 * MIB, f"the worker grew {grown // MIB} MiB"
            for listen in huge:
                listen.read_until(b"}\n")
                assert listen.status == 400, listen.seen[:300]
                assert b'"code":-32602' in listen.seen and b"MCP_LISTEN_MAX_BYTES" in listen.seen
            assert [listen.status for listen in near] == [200] * 100
            assert near[-1].acknowledgment()["params"]["notifications"]["resourceSubscriptions"][0].startswith(
                "test://near/99/0/")
        finally:
            for listen in listens:
                listen.close()
        # Closed, every stream lets go of its request (the worker's allocator may keep the pages for reuse).
        wait_until(lambda: open_request_streams(server) == 0, timeout=WAIT_S, what="the listen streams to end")


def test_an_unread_listen_stream_is_cut_off_at_the_byte_bound_and_its_connection_closed():
    env = {"MCP_PLUGINS": "tests.e2e.plugins.listen_tools", "MCP_QUEUE_MAX": "100000",
           "MCP_QUEUE_MAX_BYTES": str(1024 * 1024), "MCP_KEEPALIVE_S": "1"}
    uri = "test://watched/" + "w" * 2000
    with ServerProcess(env=env) as server:
        worker = server.worker_pids()[0]
        listen = RawListen(server, "slow", {"notifications": {"resourceSubscriptions": [uri]}})
        try:
            assert listen.status == 200
            listen.acknowledgment()
            baseline = worker_rss_kib(worker)
            # 10,000 updates of about 2 kB: some 21 MB of notifications for a client that reads none of them.
            assert call(server, "touch_often", {"uri": uri, "times": 10_000})["isError"] is False
            grown = worker_rss_kib(worker) - baseline
            assert grown < 12 * MIB, f"the worker grew {grown // MIB} MiB for one unread stream"
            wait_until(lambda: "queue full (slow consumer)" in server.read_log(), timeout=WAIT_S,
                       what="the slow consumer to be cut off")
            assert "closing the stream of subscriptions/listen slow: queue full (slow consumer)" in server.read_log()
            # Cut off as the 2025 streams are: the connection is closed under a client that still reads nothing.
            wait_until(lambda: open_request_streams(server) == 0, timeout=WAIT_S, what="the stream to end")
            assert read_until_closed(listen.sock, WAIT_S), "the server kept the unread connection open"
        finally:
            listen.close()
        assert httpx.get(server.base_url + "/healthz", timeout=WAIT_S).status_code == 200


def redis_commands(redis_server) -> int:  # noqa: F811
    """How many commands the redis-server has run so far."""
    return sum(stats["calls"] for stats in redis_server.client().info("commandstats").values())


@pytest.mark.redis
def test_listen_task_ids_are_read_once_and_unknown_ones_cost_no_redis_commands_later(redis_server):  # noqa: F811
    redis_server.client().flushdb()
    env = {"MCP_REDIS_URL": redis_server.url, "MCP_KEEPALIVE_S": "0.2"}
    with ServerProcess(env=env) as server:
        task_id = call(server, "count_down", {"steps": 3, "delay_ms": 1000}, TASKS)["taskId"]
        known = RawListen(server, "known", {"notifications": {"taskIds": [task_id, "no-such-task"]}}, TASKS)
        listens = [RawListen(server, f"idle-{n}", {"notifications": {"taskIds": [f"unknown-{n}-{i}" for i in
                                                                                 range(32)]}}, TASKS)
                   for n in range(10)]
        try:
            honoured = [listen.acknowledgment()["params"]["notifications"] for listen in [known, *listens]]
            # A second of keepalives (about 5) on 10 idle streams naming 320 unknown ids.
            before = redis_commands(redis_server)
            time.sleep(1.0)  # a plain sleep: the keepalives run in the server, nothing here to poll
            spent = redis_commands(redis_server) - before
            assert spent < 100, f"{spent} Redis commands in a second of keepalives"
            # Only a task that exists, is the principal's and has not ended is honoured, and announced.
            assert honoured == [{"taskIds": [task_id]}] + [{"taskIds": []}] * 10
            known.read_until(b'"status":"completed"')
        finally:
            for listen in [known, *listens]:
                listen.close()

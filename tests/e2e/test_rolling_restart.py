"""Rolling restarts against real processes: two gunicorn hosts sharing one redis-server, behind a balancer.

Host A is stopped (SIGTERM) and started again, then host B; then each is reloaded with SIGHUP (what
`systemctl reload` sends). Throughout, a legacy SSE session, a Streamable HTTP session, two
2026-07-28 listen streams and tasks carry traffic, and slow calls and tasks run on the host that goes. Every
session continues, every resumable stream resumes with nothing lost or repeated, every call in flight
gets its result or the documented shutdown error, and no response the balancer passes on is a 5xx.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests.e2e.rolling_balancer import Balancer
from tests.e2e.rolling_listen import ListenWork
from tests.e2e.rolling_sessions import LegacySseWork, StreamableWork
from tests.e2e.rolling_tasks import TaskWork
from tests.e2e.rolling_work import OpenWork
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

PLUGINS = "tests.e2e.plugins.slow_tools,tests.e2e.plugins.notifying_tools,tests.e2e.plugins.feature_tools"
# Calls in flight get half of it; short enough to keep the test quick, long enough for a loaded machine.
GRACEFUL_TIMEOUT_S = 4
# The kinds of open work; another kind is one more OpenWork subclass here.
WORK_KINDS: tuple[type[OpenWork], ...] = (LegacySseWork, StreamableWork, ListenWork, TaskWork)
PHASE_S = 60.0
PACE_S = 0.05
SETTLE_TICKS = 3


def host_env(redis_url: str) -> dict[str, str]:
    """One host's settings: the shared Redis, the test tools, a short grace, a quick keepalive."""
    return {"MCP_REDIS_URL": redis_url, "MCP_PLUGINS": PLUGINS, "MCP_GRACEFUL_TIMEOUT_S": str(GRACEFUL_TIMEOUT_S),
            "MCP_KEEPALIVE_S": "1"}


@pytest.fixture
def hosts(redis_server) -> Iterator[list[ServerProcess]]:  # noqa: F811
    """Two hosts of two workers each, on their own ports, sharing the module's redis-server."""
    redis_server.client().flushall()
    started = [ServerProcess(env=host_env(redis_server.url), workers=2) for _ in range(2)]
    try:
        for host in started:
            host.start()
        yield started
    finally:
        for host in started:
            host.stop()


class Traffic:
    """Every kind of open work, pumped one tick at a time."""

    def __init__(self, works: list[OpenWork]) -> None:
        self.works = works
        self.tick = 0

    def pump(self) -> None:
        """One unit of traffic for every kind."""
        self.tick += 1
        for work in self.works:
            work.pump(self.tick)

    def pump_while(self, operation: Callable[[], object]) -> None:
        """Run an operation (a stop and start, a reload) on a thread, pumping until it is done, then a little more."""
        failures: list[BaseException] = []

        def run() -> None:
            try:
                operation()
            except BaseException as failure:  # noqa: BLE001 - re-raised below
                failures.append(failure)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        deadline = time.monotonic() + PHASE_S
        while thread.is_alive():
            assert time.monotonic() < deadline, f"the operation took over {PHASE_S} s"
            self.pump()
            time.sleep(PACE_S)  # pacing the traffic, not waiting for anything
        if failures:
            raise failures[0]
        for _ in range(SETTLE_TICKS):
            self.pump()

    def restart(self, host: ServerProcess, operation: Callable[[], object]) -> None:
        """Put calls in flight on host, run the operation under traffic, wait for the calls' outcomes."""
        for work in self.works:
            work.before_stop(host)
        self.pump_while(operation)
        for work in self.works:
            work.after_restart()


def stop_and_start(host: ServerProcess) -> Callable[[], None]:
    """SIGTERM the host's master, wait for it to exit (cleanly, within the graceful timeout), start it again."""
    def run() -> None:
        started = time.monotonic()
        host.terminate()
        assert host.wait_exited(GRACEFUL_TIMEOUT_S + 10) == 0
        # Half the graceful timeout for calls, then idle keep-alive connections (2 s) and gunicorn's 1 s ticks;
        # a worker that waited out graceful_timeout also logs it (checked at the end).
        assert time.monotonic() - started < GRACEFUL_TIMEOUT_S + 4, "the host took too long to stop"
        host.start()
    return run


def test_rolling_restart_and_reload_keep_every_session_stream_and_call(hosts):
    balancer = Balancer(hosts)
    works = [kind(balancer) for kind in WORK_KINDS]
    try:
        for work in works:
            work.start()
        traffic = Traffic(works)
        for _ in range(SETTLE_TICKS):
            traffic.pump()
        for host in hosts:
            traffic.restart(host, stop_and_start(host))
        for host in hosts:
            traffic.restart(host, host.reload)
        for work in works:
            work.check()
        print("\n" + "\n".join(work.summary() for work in works))
        assert balancer.server_errors() == []
        for host in hosts:
            log = host.read_log()
            assert "Traceback" not in log
            assert "Worker graceful timeout" not in log
    finally:
        for work in works:
            work.close()

"""Start the real server (gunicorn, gevent worker) on a free loopback port, and stop it by PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = str(Path(sys.executable).with_name("gunicorn"))
HEARTBEAT_TIMEOUT_S = 120


def free_port() -> int:
    """Ask the kernel for a free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_stopped(pid: int, timeout: float = 10.0) -> None:
    """Wait until a process that was sent SIGSTOP is in the stopped state ("T" in /proc/PID/stat)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return
        if state in ("T", "t"):
            return
        time.sleep(0.001)
    raise AssertionError(f"worker {pid} did not stop within {timeout} s")


class ServerProcess:
    """A gunicorn serving wsgi:app (or another app) with the given MCP_* environment."""

    def __init__(self, env: Mapping[str, str] | None = None, workers: int = 1, port: int | None = None,
                 extra_args: tuple[str, ...] = (), app: str = "wsgi:app", health_path: str = "/healthz") -> None:
        self.app = app
        # Where readiness is polled: a host app serves it under its MCP path.
        self.health_path = health_path
        self.port = port or free_port()
        self.workers = workers
        self.env = {**os.environ, "MCP_WORKERS": str(workers), **(env or {})}
        self.env.setdefault("MCP_LOG_LEVEL", "INFO")
        self.extra_args = extra_args
        self.log = tempfile.NamedTemporaryFile(prefix="mcp-e2e-", suffix=".log", delete=False)
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT"""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return self.base_url + "/mcp"

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start gunicorn and wait until /healthz answers."""
        # accepting_only freezes workers with SIGSTOP, and a loaded 2-core CI machine can starve one: a frozen
        # worker misses its heartbeat, so the master's timeout (30 s in gunicorn.conf.py) is raised here.
        self.proc = subprocess.Popen(
            [GUNICORN, "-c", "gunicorn.conf.py", "--bind", f"127.0.0.1:{self.port}", "-w", str(self.workers),
             "--timeout", str(HEARTBEAT_TIMEOUT_S), *self.extra_args, self.app],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Poll /healthz until it answers 200 or the deadline passes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.read_log()}")
            try:
                if httpx.get(self.base_url + self.health_path, timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server did not become ready in {timeout}s:\n{self.read_log()}")

    def worker_pids(self) -> list[int]:
        """The PIDs of the gunicorn workers (children of the master)."""
        if self.proc is None:
            return []
        out = subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout
        return [int(pid) for pid in out.split()]

    @contextmanager
    def accepting_only(self, worker_pid: int) -> Iterator[None]:
        """Freeze every other worker (SIGSTOP) so new connections can land only on worker_pid."""
        # The kernel may hand every connection to one worker; a stopped worker cannot accept.
        live = self.worker_pids()
        if worker_pid not in live:
            # Freezing the rest would leave no worker to accept: say so, with what the server logged.
            raise AssertionError(f"worker {worker_pid} is gone (live: {live}); server log:\n{self.read_log()[-4000:]}")
        others = [pid for pid in live if pid != worker_pid]
        for pid in others:
            os.kill(pid, signal.SIGSTOP)
        # kill() returns before a worker running on another core has stopped; one that still accepts the next
        # connection would then hold it frozen. Go on only once every other worker is really stopped.
        for pid in others:
            wait_stopped(pid)
        try:
            yield
        finally:
            for pid in others:
                os.kill(pid, signal.SIGCONT)

    def read_log(self) -> str:
        """Everything the server wrote to stderr so far."""
        return Path(self.log.name).read_text(errors="replace")

    def reload(self, timeout: float = 30.0) -> list[int]:
        """SIGHUP the master (what `systemctl reload` sends); wait until new workers serve and the old ones exited.

        Returns the new workers' PIDs.
        """
        assert self.proc is not None and self.proc.poll() is None, "the server is not running"
        old = set(self.worker_pids())
        self.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = set(self.worker_pids())
            if len(live) == self.workers and not live & old:
                self.wait_ready(max(1.0, deadline - time.monotonic()))
                return sorted(live)
            time.sleep(0.05)
        raise AssertionError(f"reload did not replace workers {sorted(old)} within {timeout} s:\n"
                             f"{self.read_log()[-4000:]}")

    def terminate(self) -> None:
        """SIGTERM the master and return at once (a graceful stop under way; wait_exited waits for its end)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)

    def wait_exited(self, timeout: float = 30.0) -> int:
        """Wait for the master to exit after terminate(); return its exit code."""
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM the master, wait, SIGKILL if it lingers; return the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(5)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        os.unlink(self.log.name)

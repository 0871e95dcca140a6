"""Start the servers under test on free loopback ports, read their CPU and memory from /proc, stop them by PID."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["ROOT", "RedisProcess", "ServerUnderTest", "cpu_seconds_of", "floor_server", "free_port", "our_server",
           "redis_server", "rss_bytes_of", "sdk_server", "stop_by_pid", "wsgi_floor_server"]

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def free_port() -> int:
    """Ask the kernel for a free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def read_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name, or None if the process is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return raw.rsplit(")", 1)[1].split()


def descendants(pids: Iterable[int]) -> list[int]:
    """The given PIDs and every live process below them."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = read_stat(int(entry))
            if fields is not None:
                parents[int(entry)] = int(fields[1])
    found = [pid for pid in pids if pid in parents]
    frontier = list(found)
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found.extend(children)
        frontier.extend(children)
    return found


def cpu_seconds_of(pids: Iterable[int]) -> float:
    """User plus system CPU seconds of the processes and their live descendants (utime+stime)."""
    total = 0
    for pid in descendants(pids):
        fields = read_stat(pid)
        if fields is not None:
            # After the name: state(0) ppid(1) ... utime(11) stime(12)
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


def rss_bytes_of(pids: Iterable[int]) -> int:
    """Resident memory of the processes and their live descendants."""
    total = 0
    for pid in descendants(pids):
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


class ServerUnderTest:
    """One server process tree: started on a free port, probed through /proc, stopped by PID."""

    def __init__(self, name: str, argv: list[str], port: int, paths: Mapping[str, str],
                 env: Mapping[str, str] | None = None, ready_path: str = "/", cwd: Path = ROOT) -> None:
        self.name = name
        self.cwd = cwd
        self.argv = argv
        self.port = port
        self.paths = dict(paths)
        self.env = {**os.environ, **(env or {})}
        self.ready_path = ready_path
        self.log = tempfile.NamedTemporaryFile(prefix=f"bench-{name}-", suffix=".log", delete=False)
        self.proc: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT"""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ServerUnderTest:
        """Start the process and wait until it answers HTTP."""
        self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.read_log()[-3000:]}")
            if self.answers():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer within {timeout}s:\n{self.read_log()[-3000:]}")

    def answers(self) -> bool:
        """Whether the server answers an HTTP GET at all (any status)."""
        try:
            with urllib.request.urlopen(self.base_url + self.ready_path, timeout=1.0):
                return True
        except urllib.error.HTTPError:
            return True
        except (urllib.error.URLError, OSError):
            return False

    @property
    def pids(self) -> list[int]:
        """The main PID (its children are found at probe time)."""
        return [self.proc.pid] if self.proc is not None else []

    def cpu_seconds(self) -> float:
        """CPU seconds used so far by the whole process tree."""
        return cpu_seconds_of(self.pids)

    def rss_bytes(self) -> int:
        """Resident memory of the whole process tree."""
        return rss_bytes_of(self.pids)

    def worker_pids(self) -> list[int]:
        """The processes below the main one (gunicorn's workers), or the main one when it has none."""
        below = descendants(self.pids)[1:]
        return below or self.pids

    def read_log(self) -> str:
        """What the server wrote so far."""
        return Path(self.log.name).read_text(errors="replace")

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM by PID, then SIGKILL if it lingers; remove the log."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        Path(self.log.name).unlink(missing_ok=True)

    def __enter__(self) -> ServerUnderTest:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def our_server(workers: int = 1, env: Mapping[str, str] | None = None, tree: Path = ROOT) -> ServerUnderTest:
    """This project (or the checkout at tree, run with this venv): gunicorn with the gevent worker."""
    port = free_port()
    argv = [str(BIN / "gunicorn"), "-c", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}", "-w", str(workers),
            "wsgi:app"]
    return ServerUnderTest(f"ours-{workers}w", argv, port, {"sse": "/mcp", "streamable": "/mcp", "stateless": "/mcp"},
                           {"MCP_WORKERS": str(workers), **(env or {})}, ready_path="/healthz", cwd=tree)


def sdk_server(transport: str) -> ServerUnderTest:
    """The official SDK's MCPServer on uvicorn, serving one transport (stateless: its Streamable HTTP app)."""
    port = free_port()
    app = "streamable" if transport == "stateless" else transport
    argv = [sys.executable, "-m", "bench.peers.sdk_server", "--transport", app, "--port", str(port)]
    return ServerUnderTest(f"sdk-{transport}", argv, port, {"sse": "/sse", "streamable": "/mcp", "stateless": "/mcp"})


def floor_server() -> ServerUnderTest:
    """Bare Flask + gevent + jsonrpcserver under the same gunicorn worker, one process."""
    port = free_port()
    argv = [str(BIN / "gunicorn"), "-k", "gevent", "--bind", f"127.0.0.1:{port}", "-w", "1",
            "--worker-connections", "12000", "--no-control-socket", "--graceful-timeout", "2",
            "bench.peers.floor_server:app"]
    return ServerUnderTest("floor", argv, port, {"sse": "/sse", "streamable": "/mcp"})


def wsgi_floor_server() -> ServerUnderTest:
    """A plain WSGI function under the same gunicorn + gevent worker: the cost of the server stack alone."""
    port = free_port()
    argv = [str(BIN / "gunicorn"), "-k", "gevent", "--bind", f"127.0.0.1:{port}", "-w", "1",
            "--worker-connections", "12000", "--no-control-socket", "--graceful-timeout", "2",
            "bench.peers.wsgi_floor:app"]
    # Any path but /mcp answers a GET at once (405), which is how the bench sees it is up; GET /mcp opens a stream.
    return ServerUnderTest("wsgi", argv, port, {"sse": "/mcp", "stateless": "/mcp", "streamable": "/mcp"},
                           ready_path="/healthz")


class RedisProcess:
    """A throwaway redis-server on a free loopback port, persisting nothing; extra_args make it a replica or a
    cluster node."""

    def __init__(self, extra_args: tuple[str, ...] = ()) -> None:
        self.port = free_port()
        self.extra_args = extra_args
        self.dir = tempfile.mkdtemp(prefix="bench-redis-")
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """redis://127.0.0.1:PORT/0"""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pids(self) -> list[int]:
        """The redis-server's PID, once started."""
        return [self.proc.pid] if self.proc is not None else []

    def __enter__(self) -> RedisProcess:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--logfile", str(Path(self.dir) / "redis.log"), *self.extra_args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.05)
        log = (Path(self.dir) / "redis.log").read_text(errors="replace")[-1000:] if Path(self.dir).exists() else ""
        self.__exit__()
        raise RuntimeError(f"redis-server did not start on port {self.port}:\n{log}")

    def __exit__(self, *exc: object) -> None:
        stop_by_pid(self.proc)
        shutil.rmtree(self.dir, ignore_errors=True)


def stop_by_pid(proc: subprocess.Popen | None, timeout: float = 10.0) -> None:
    """SIGTERM the process, then SIGKILL if it lingers, and reap it."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def redis_server() -> RedisProcess | None:
    """A RedisProcess, or None when redis-server or our Redis store is missing."""
    if shutil.which("redis-server") is None or not (ROOT / "flask_mcp_gevent" / "store" / "redis.py").exists():
        return None
    return RedisProcess()

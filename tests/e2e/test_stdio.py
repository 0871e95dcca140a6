"""`python app.py --stdio` driven by a raw subprocess: only JSON-RPC on stdout, clean exits at EOF and SIGTERM."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from tests.e2e.conftest import E2E_PLUGINS
from tests.e2e.raw_clients import call_tool, initialize, notification, request
from tests.e2e.server_process import ROOT

pytestmark = pytest.mark.e2e

WAIT_S = 20.0
NOISE = "stray-print-from-a-tool"


class StdioProcess:
    """The stdio server as a child process, its stdout read line by line on a thread."""

    def __init__(self, plugins: str = E2E_PLUGINS) -> None:
        env = {**os.environ, "MCP_PLUGINS": plugins, "MCP_LOG_LEVEL": "INFO"}
        self.proc = subprocess.Popen(
            [sys.executable, "app.py", "--stdio"], cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read_stdout, daemon=True).start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read_stdout(self) -> None:
        """Queue every stdout line; None at EOF."""
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        """Collect stderr (so the child never blocks on a full pipe)."""
        self.stderr = self.proc.stderr.read()

    def send(self, message: Any) -> None:
        """Write one message (or raw bytes) as a line."""
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def next_line(self) -> bytes | None:
        """The next stdout line, None at EOF; fails after WAIT_S."""
        return self.lines.get(timeout=WAIT_S)

    def read_until(self, request_id: Any) -> list[dict[str, Any]]:
        """Read messages until the response to request_id; return all of them."""
        seen = []
        while True:
            line = self.next_line()
            assert line is not None, "stdout ended early"
            seen.append(json.loads(line))
            if seen[-1].get("id") == request_id and "method" not in seen[-1]:
                return seen

    def finish(self) -> tuple[int, list[bytes], str]:
        """Close stdin, wait for exit; return the exit code, remaining stdout lines and all of stderr."""
        self.proc.stdin.close()
        code = self.proc.wait(WAIT_S)
        rest = []
        while (line := self.next_line()) is not None:
            rest.append(line)
        self._stderr_reader.join(WAIT_S)
        return code, rest, self.stderr.decode(errors="replace")

    def kill(self) -> None:
        """Make sure the child is gone (test cleanup)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def stdio():
    """A running stdio server, killed at the end if the test did not stop it."""
    process = StdioProcess()
    yield process
    process.kill()


def test_answers_are_flushed_while_stdin_stays_open(stdio):
    init = initialize("2025-06-18")
    listing = request("tools/list")
    noisy = call_tool("print_to_stdout", {"text": NOISE})
    echo = call_tool("echo", {"text": "over stdio"})
    stdio.send(init)
    stdio.send(notification("notifications/initialized"))
    stdio.send(listing)
    stdio.send(b"{this is not json")
    stdio.send(b"")
    stdio.send(noisy)
    stdio.send(echo)
    # Each answer is flushed as it is written: all of them arrive before stdin is closed.
    seen = stdio.read_until(echo["id"])
    assert {init["id"], listing["id"], noisy["id"]} <= {m.get("id") for m in seen}
    code, rest, stderr = stdio.finish()
    assert code == 0
    assert rest == [], "nothing after the last answer"


def test_every_stdout_line_is_a_jsonrpc_message_and_noise_goes_to_stderr(stdio):
    requests = [initialize("2025-06-18"), request("tools/list"), call_tool("print_to_stdout", {"text": NOISE}),
                call_tool("add", {"a": 1, "b": 2}), call_tool("echo", {"text": "ünïcode"})]
    stdio.send(requests[0])
    stdio.send(notification("notifications/initialized"))
    for message in requests[1:]:
        stdio.send(message)
    stdio.send(b"{this is not json")
    stdio.send(b"   ")
    code, lines, stderr = stdio.finish()
    assert code == 0
    messages = []
    for line in lines:
        assert line.endswith(b"\n") and b"\n" not in line[:-1], line
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0", message
        messages.append(message)
    by_id = {m["id"]: m for m in messages if m.get("id") is not None}
    assert set(by_id) == {m["id"] for m in requests}
    assert by_id[requests[3]["id"]]["result"]["structuredContent"] == {"result": 3}
    assert by_id[requests[4]["id"]]["result"]["content"] == [{"type": "text", "text": "ünïcode"}]
    assert by_id[requests[2]["id"]]["result"]["content"] == [{"type": "text", "text": NOISE}]
    # The bad line got exactly one -32700 with id null; the blank line got nothing.
    parse_errors = [m for m in messages if "error" in m]
    assert len(parse_errors) == 1
    assert parse_errors[0]["id"] is None and parse_errors[0]["error"]["code"] == -32700
    assert len(messages) == len(requests) + 1
    # The tool's prints (print(), sys.stdout and a raw write to fd 1) all landed on stderr, with the logs.
    assert stderr.count(NOISE) == 3
    assert "method=tools/call" in stderr


def test_exits_0_at_eof_without_input(stdio):
    code, lines, _ = stdio.finish()
    assert code == 0
    assert lines == []


def test_eof_waits_for_calls_in_flight(stdio):
    stdio.send(initialize("2025-06-18"))
    slow = call_tool("sleep_ms", {"ms": 300})
    stdio.send(slow)
    code, lines, _ = stdio.finish()
    assert code == 0
    answers = {json.loads(line)["id"]: json.loads(line) for line in lines}
    assert answers[slow["id"]]["result"]["content"] == [{"type": "text", "text": "slept 300 ms"}]


def test_slow_call_does_not_block_the_next_request(stdio):
    stdio.send(initialize("2025-06-18"))
    slow = call_tool("sleep_ms", {"ms": 1500})
    fast = call_tool("echo", {"text": "fast"})
    stdio.send(slow)
    stdio.send(fast)
    seen = stdio.read_until(fast["id"])
    assert slow["id"] not in {m.get("id") for m in seen}, "the echo waited for the slow call"
    assert stdio.read_until(slow["id"])[-1]["result"]["content"][0]["text"] == "slept 1500 ms"


def test_sigterm_exits_promptly_and_cleanly(stdio):
    init = initialize("2025-06-18")
    stdio.send(init)
    stdio.read_until(init["id"])
    # A long call in flight must not hold the process.
    stdio.send(call_tool("sleep_ms", {"ms": 60000}))
    started = time.monotonic()
    stdio.proc.send_signal(signal.SIGTERM)
    code = stdio.proc.wait(WAIT_S)
    assert time.monotonic() - started < 5.0
    assert code == 0

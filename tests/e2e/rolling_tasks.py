"""Running tasks (the tasks extension) kept through the rolling restart, polled through the balancer.

A task lives in Redis, so `tasks/get` answers on any host. Short tasks started on a host about to stop finish
within the grace it gives and end `completed`; long ones cannot, and end `failed` with the shutdown message,
never `working` for ever. One short task started each few ticks, on whichever host the balancer picks, must
end `completed`: a restart loses none of them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tests.e2e.rolling_work import JOIN_S, OpenWork
from tests.e2e.server_process import ServerProcess
from tests.e2e.stateless_client import stateless_headers, stateless_meta, stateless_request

__all__ = ["TaskWork"]

TASKS_EXTENSION = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
SHORT = {"steps": 1, "delay_ms": 100}  # well inside the grace a stopping worker gives
LONG = {"steps": 100, "delay_ms": 600}  # a minute: stopped by the shutdown
PUMP_EVERY = 8
POLL_S = 0.2
SHUTDOWN_TEXT = "The server stopped before this task finished"
TERMINAL = {"completed", "failed", "cancelled"}


@dataclass
class StartedTask:
    """One task the test started: how long it was meant to run, and its last polled state."""

    task_id: str
    long: bool
    state: dict[str, Any] | None = None


class TaskWork(OpenWork):
    """Tasks started before each stop (short and long, on that host) and during the traffic (short, anywhere)."""

    def start(self) -> None:
        self.tasks: list[StartedTask] = []

    def create(self, arguments: dict[str, Any], pin: ServerProcess | None = None) -> str:
        """Start count_down as a task (on pin, or where the balancer sends it); its task id."""
        meta = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": TASKS_EXTENSION})
        body = stateless_request("tools/call", {"name": "count_down", "arguments": arguments}, meta=meta)
        response = self.balancer.send(self.http, "POST", "/mcp", pin=pin, json=body, headers=stateless_headers(body))
        assert response.status_code == 200, (response.status_code, response.text)
        result = response.json()["result"]
        assert result["resultType"] == "task" and result["status"] == "working", result
        return result["taskId"]

    def poll(self, task: StartedTask) -> dict[str, Any]:
        """tasks/get for task through the balancer (any host may answer); its result."""
        meta = stateless_meta(**{"io.modelcontextprotocol/clientCapabilities": TASKS_EXTENSION})
        body = stateless_request("tasks/get", {"taskId": task.task_id}, meta=meta)
        headers = stateless_headers(body, **{"Mcp-Name": task.task_id})
        response = self.balancer.send(self.http, "POST", "/mcp", json=body, headers=headers)
        assert response.status_code == 200, (response.status_code, response.text)
        task.state = response.json()["result"]
        return task.state

    def pump(self, tick: int) -> None:
        if tick % PUMP_EVERY == 0:
            self.tasks.append(StartedTask(self.create(SHORT), long=False))

    def before_stop(self, host: ServerProcess) -> None:
        for arguments, long in ((SHORT, False), (LONG, True)):
            self.tasks.append(StartedTask(self.create(arguments, pin=host), long=long))

    def after_restart(self) -> None:
        """Poll every task started so far until it has ended (bounded)."""
        deadline = time.monotonic() + JOIN_S
        for task in self.tasks:
            while (task.state or {}).get("status") not in TERMINAL:
                assert time.monotonic() < deadline, f"task {task.task_id} still {task.state} after {JOIN_S} s"
                if self.poll(task)["status"] not in TERMINAL:
                    time.sleep(POLL_S)  # the server's pollIntervalMs is longer; this keeps the test short

    def check(self) -> None:
        self.after_restart()
        assert any(task.long for task in self.tasks) and any(not task.long for task in self.tasks)
        for task in self.tasks:
            state = task.state or {}
            if task.long:
                assert state["status"] == "failed" and SHUTDOWN_TEXT in state["statusMessage"], state
                assert state["error"]["code"] == -32603, state
            else:
                assert state["status"] == "completed", state
                assert state["result"]["content"][0]["text"] == "Counted down from 1.", state

    def summary(self) -> str:
        long = [task for task in self.tasks if task.long]
        return (f"TaskWork: {len(self.tasks) - len(long)} short tasks completed, {len(long)} long tasks failed "
                "by the shutdown")

"""A 2026-07-28 client of a Server for the tasks tests: requests dispatched as the stateless wire does it."""

from __future__ import annotations

from typing import Any

from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.stateless.metadata import ephemeral_session
from flask_mcp_gevent.tasks.shapes import TASKS_EXTENSION
from tests.support.waiting import wait_until

WITH_TASKS = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
WITHOUT_TASKS = {"elicitation": {}}
TERMINAL = ("completed", "failed", "cancelled")
WAIT_S = 10.0


def code_of(response: dict[str, Any]) -> int | None:
    """The error code of a response (None for a result)."""
    return response.get("error", {}).get("code")


class Client:
    """A 2026-07-28 client of one principal, sending each request as the stateless wire would dispatch it."""

    def __init__(self, server, principal: str | None = None, capabilities: dict[str, Any] | None = None) -> None:
        self.server = server
        self.principal = principal
        self.capabilities = WITH_TASKS if capabilities is None else capabilities
        self.next_id = 0

    def __call__(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one request; return its response (decorated as the wire sends it)."""
        self.next_id += 1
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                           "io.modelcontextprotocol/clientCapabilities": self.capabilities}
        body = parse_body(dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
        message = body.messages[0]
        session = ephemeral_session(message.meta, self.principal)
        return loads(dumps(self.server.handle_request(session, message, lambda _: None)))

    def call(self, name: str, **arguments: Any) -> dict[str, Any]:
        """tools/call name; the result (asserting there is one)."""
        response = self("tools/call", name=name, arguments=arguments)
        assert "result" in response, response
        return response["result"]

    def get(self, task_id: str) -> dict[str, Any]:
        """tasks/get; the result (asserting there is one)."""
        response = self("tasks/get", taskId=task_id)
        assert "result" in response, response
        return response["result"]

    def until(self, task_id: str, statuses: tuple[str, ...] = TERMINAL) -> dict[str, Any]:
        """Poll tasks/get until the task's status is one of statuses (bounded)."""
        found: dict[str, Any] = {}

        def reached() -> bool:
            found.update(self.get(task_id))
            return found["status"] in statuses

        wait_until(reached, timeout=WAIT_S)
        return found



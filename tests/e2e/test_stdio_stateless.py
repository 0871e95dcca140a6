"""stdio in MCP 2026-07-28: the era follows the first request, discover answers either era, listen over JSON lines."""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest

from tests.e2e.conftest import E2E_PLUGINS
from tests.e2e.raw_clients import initialize, notification, request
from tests.e2e.test_stdio import StdioProcess

pytestmark = pytest.mark.e2e

PLUGINS = E2E_PLUGINS + ",tests.e2e.plugins.feature_tools"
TAG = "io.modelcontextprotocol/subscriptionId"
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-stdio", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}


def stateless(method: str, params: dict[str, Any] | None = None, request_id: Any = None) -> dict[str, Any]:
    """A 2026-07-28 request: its params carry the _meta every request needs."""
    message = request(method, {**(params or {}), "_meta": META})
    if request_id is not None:
        message["id"] = request_id
    return message


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 tools/call."""
    return stateless("tools/call", {"name": name, "arguments": arguments})


def next_json(stdio: StdioProcess) -> dict[str, Any]:
    """The next message on stdout."""
    line = stdio.next_line()
    assert line is not None, "stdout ended early"
    return json.loads(line)


@pytest.fixture
def stdio():
    """A stdio server with the feature tools (change_registry, touch_resource)."""
    process = StdioProcess(PLUGINS)
    yield process
    process.kill()


def test_discover_probe_then_initialize_keeps_the_legacy_session(stdio):
    probe = stateless("server/discover")
    stdio.send(probe)
    [answer] = stdio.read_until(probe["id"])
    assert "2026-07-28" in answer["result"]["supportedVersions"]
    assert answer["result"]["resultType"] == "complete"
    init = initialize("2025-11-25")
    stdio.send(init)
    assert stdio.read_until(init["id"])[-1]["result"]["protocolVersion"] == "2025-11-25"
    stdio.send(notification("notifications/initialized"))
    listing = request("tools/list")
    stdio.send(listing)
    result = stdio.read_until(listing["id"])[-1]["result"]
    assert "resultType" not in result and "tools" in result
    assert stdio.finish()[0] == 0


def test_a_stateless_first_request_fixes_the_stateless_era(stdio):
    listing = stateless("tools/list")
    stdio.send(listing)
    assert stdio.read_until(listing["id"])[-1]["result"]["resultType"] == "complete"
    # The connection is stateless now: a handshake gets no session (its missing _meta is the first failure),
    # and initialize with stateless _meta is a method this era does not have.
    init = initialize("2025-11-25")
    stdio.send(init)
    assert stdio.read_until(init["id"])[-1]["error"]["code"] == -32602
    init_stateless = stateless("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "x", "version": "1"}})
    stdio.send(init_stateless)
    assert stdio.read_until(init_stateless["id"])[-1]["error"]["code"] == -32601
    assert stdio.finish()[0] == 0


def test_listen_acknowledges_first_then_only_filtered_tagged_notifications(stdio):
    listen = stateless("subscriptions/listen", {"notifications": {
        "toolsListChanged": True, "resourceSubscriptions": ["test://watched"]}}, request_id=7)
    stdio.send(listen)
    ack = next_json(stdio)
    assert ack == {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"_meta": {TAG: 7}, "notifications": {
                       "toolsListChanged": True, "resourceSubscriptions": ["test://watched"]}}}
    seen = []
    for message in (call("change_registry", {"kind": "prompt", "action": "add"}),
                    call("touch_resource", {"uri": "test://other"}),
                    call("change_registry", {"kind": "tool", "action": "add", "name": "rt-listen"}),
                    call("touch_resource", {"uri": "test://watched"})):
        stdio.send(message)
        seen += [m for m in stdio.read_until(message["id"]) if "method" in m]
    # A notification may come just after the answer of the call that caused it.
    if len(seen) < 2:
        seen.append(next_json(stdio))
    assert [(m["method"], m["params"]["_meta"][TAG]) for m in seen] == [
        ("notifications/tools/list_changed", 7), ("notifications/resources/updated", 7)]
    # Cancelled: the listen ends without an answer, and a later change reaches nobody.
    stdio.send(notification("notifications/cancelled", {"requestId": 7}))
    last = call("change_registry", {"kind": "tool", "action": "remove", "name": "rt-listen"})
    stdio.send(last)
    assert [m for m in stdio.read_until(last["id"]) if m.get("id") != last["id"]] == []
    code, rest, _ = stdio.finish()
    assert code == 0 and rest == []


def test_sigterm_ends_a_listen_with_its_result_and_a_cancellation(stdio):
    listen = stateless("subscriptions/listen", {"notifications": {"promptsListChanged": True}}, request_id="l-1")
    stdio.send(listen)
    assert next_json(stdio)["method"] == "notifications/subscriptions/acknowledged"
    stdio.proc.send_signal(signal.SIGTERM)
    result = next_json(stdio)
    assert result["id"] == "l-1" and result["result"]["resultType"] == "complete"
    assert result["result"]["_meta"][TAG] == "l-1"
    assert next_json(stdio) == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": "l-1", "reason": "server shutting down"}}
    assert stdio.next_line() is None
    assert stdio.proc.wait(10) == 0


def test_eof_with_a_listen_open_exits_at_once(stdio):
    listen = stateless("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    stdio.send(listen)
    assert next_json(stdio)["method"] == "notifications/subscriptions/acknowledged"
    stdio.proc.stdin.close()
    # Well inside the 10 s a running request gets to finish at EOF: a listen is not waited for.
    assert stdio.proc.wait(5) == 0


def test_notifications_cancelled_stops_a_running_stateless_call(stdio):
    waiting = call("wait_until_cancelled", {"key": "stdio-stateless", "seconds": 30})
    waiting["id"] = "w"
    stdio.send(waiting)
    state = call("call_state", {"key": "stdio-stateless"})
    for _ in range(100):  # bounded: the call starts within a few polls
        stdio.send(state)
        [answer] = stdio.read_until(state["id"])
        if answer["result"]["structuredContent"].get("state") == "running":
            break
    stdio.send(notification("notifications/cancelled", {"requestId": "w"}))
    stdio.send(state)
    assert stdio.read_until(state["id"])[-1]["result"]["structuredContent"]["state"] == "cancelled"
    code, rest, _ = stdio.finish()
    assert code == 0 and rest == [], "a cancelled call is never answered"

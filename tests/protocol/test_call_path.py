"""Which protocol modules a tools/call passes through: the input rounds and the tasks extension only where usable."""

from __future__ import annotations

import pytest

from bench.call_path import trace_modules
from flask_mcp_gevent.stateless import metadata
from flask_mcp_gevent.stateless.metadata import ephemeral_session
from tests.protocol.conftest import Rpc

ROUNDS = "flask_mcp_gevent/stateless/input_rounds.py"
TASKS = "flask_mcp_gevent/tasks/methods.py"
ECHO = {"name": "echo", "arguments": {"text": "hi"}}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25"])
def test_handshake_era_tools_call_enters_neither_input_rounds_nor_tasks(make_rpc, version):
    client = make_rpc(version)
    client.request("tools/call", ECHO)  # the first call's imports and caches are not the call path
    entered, answer = trace_modules(lambda: client.request("tools/call", ECHO, request_id=2))
    assert answer["result"]["content"][0]["text"] == "hi"
    assert ROUNDS not in entered and TASKS not in entered


def test_2026_tools_call_of_a_tool_without_task_support_enters_the_rounds_but_not_tasks(server):
    capabilities = {metadata.PROTOCOL_VERSION: "2026-07-28", metadata.CLIENT_CAPABILITIES: {}}
    client = Rpc(server, ephemeral_session(capabilities, None))
    params = {**ECHO, "_meta": capabilities}
    client.request("tools/call", params)
    entered, answer = trace_modules(lambda: client.request("tools/call", params, request_id=2))
    assert answer["result"]["content"][0]["text"] == "hi"
    assert ROUNDS in entered and TASKS not in entered

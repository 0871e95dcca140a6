"""What a task keeps and what its notifications carry, through the server: every part bounded in bytes.

A task keeps its request (MCP_TASK_MAX_REQUEST_BYTES, capabilities by name only), its questions, answers and
result or error (MCP_TASK_MAX_RESULT_BYTES each), all tasks of the in-memory store together MCP_TASKS_MAX_BYTES; a
notification inlines at most MCP_TASK_MAX_NOTIFICATION_BYTES.
"""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.encoding import loads
from flask_mcp_gevent.tasks.shapes import TASKS_EXTENSION
from mcp_tools import ProtocolError, Registry, tool
from tests.support.tasks_client import WAIT_S, WITH_TASKS, Client, code_of

NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}


@tool(input_schema={"type": "object", "properties": {"size": {"type": "integer"}, "note": {"type": "string"},
                                                     "seconds": {"type": "number"}}},
      task="optional")
def sized(size: int = 10, note: str = "", seconds: float = 0) -> str:
    """Sleep, then return size characters."""
    gevent.sleep(seconds)
    return "x" * size


@tool(input_schema={"type": "object", "properties": {"size": {"type": "integer"}}}, task="optional")
def long_refusal(size: int = 10) -> str:
    """Fail with a JSON-RPC error whose message and data are size characters each."""
    raise ProtocolError("m" * size, data={"echo": "d" * size})


@tool(input_schema={"type": "object", "properties": {"size": {"type": "integer"}}}, task="optional")
def long_question(ctx, size: int = 10) -> str:
    """Ask a question size characters long."""
    ctx.elicit("q" * size, NAME_SCHEMA, key="long")
    return "asked"


@tool(input_schema={"type": "object", "properties": {}}, task="required", ask_before_task=True)
def name_first(ctx) -> str:
    """Ask for a name before becoming a task."""
    answer = ctx.elicit("Name?", NAME_SCHEMA, key="name")
    ctx.start_task()
    return f"Hello, {answer.get('content', {}).get('name')}"


@pytest.fixture
def registry() -> Registry:
    """Only the tools above."""
    found = Registry()
    for fn in (sized, long_refusal, long_question, name_first):
        found.add_function(fn)
    return found


def stored_request(server, task_id: str) -> dict:
    """The request JSON the in-memory store keeps for alice's task."""
    return loads(server.tasks.store.tasks[("alice", task_id)].request)


def test_a_task_keeps_the_names_of_its_requests_capabilities_not_their_contents(server):
    capabilities = {**WITH_TASKS, "elicitation": {"form": {}, "url": {"x": "y" * 5000}},
                    "experimental": {"blob": {"z": "z" * 100_000}}}
    task_id = Client(server, "alice", capabilities).call("sized", size=1)["taskId"]
    assert stored_request(server, task_id)["capabilities"] == {
        "elicitation": {"form": {}, "url": {}}, "extensions": {TASKS_EXTENSION: {}}, "experimental": {"blob": {}}}
    assert len(server.tasks.store.tasks[("alice", task_id)].request) < 1024


def test_a_call_whose_task_would_keep_more_than_the_request_bound_is_32602_and_makes_no_task(make_server, registry):
    server = make_server({"MCP_TASK_MAX_REQUEST_BYTES": "2048"}, registry=registry)
    alice = Client(server, "alice")
    assert alice.call("sized", note="n" * 1500)["resultType"] == "task"
    refused = alice("tools/call", name="sized", arguments={"note": "n" * 2500})
    assert code_of(refused) == -32602
    assert "MCP_TASK_MAX_REQUEST_BYTES" in refused["error"]["message"]
    assert len(server.tasks.store.tasks) == 1


def test_a_failed_task_keeps_a_long_error_only_within_the_result_bound(make_server, registry):
    server = make_server({"MCP_TASK_MAX_RESULT_BYTES": "4096"}, registry=registry)
    alice = Client(server, "alice")
    short = alice.until(alice.call("long_refusal", size=100)["taskId"])
    assert short["error"] == {"code": -32603, "message": "m" * 100, "data": {"echo": "d" * 100}}
    long = alice.until(alice.call("long_refusal", size=50_000)["taskId"])
    assert long["status"] == "failed"
    assert long["error"] == {"code": -32603, "message": "m" * 1000}
    assert long["statusMessage"] == "m" * 1000


def test_questions_over_the_result_bound_fail_the_task_clearly(make_server, registry):
    server = make_server({"MCP_TASK_MAX_RESULT_BYTES": "4096"}, registry=registry)
    alice = Client(server, "alice")
    assert alice.until(alice.call("long_question", size=100)["taskId"], ("input_required",))["inputRequests"]
    failed = alice.until(alice.call("long_question", size=10_000)["taskId"])
    assert (failed["status"], failed["error"]["code"]) == ("failed", -32603)
    assert "questions" in failed["statusMessage"] and "MCP_TASK_MAX_RESULT_BYTES" in failed["statusMessage"]


def test_answers_given_before_the_task_count_against_the_answers_bound(make_server, registry):
    server = make_server({"MCP_TASK_MAX_RESULT_BYTES": "1024"}, registry=registry)
    alice = Client(server, "alice")
    asked = alice.call("name_first")
    assert asked["resultType"] == "input_required"
    answer = {"action": "accept", "content": {"name": "n" * 2000}}
    refused = alice("tools/call", name="name_first", arguments={}, inputResponses={"name": answer},
                    requestState=asked["requestState"])
    assert code_of(refused) == -32602
    assert "MCP_TASK_MAX_RESULT_BYTES" in refused["error"]["message"]
    assert server.tasks.store.tasks == {}


def test_a_listen_stream_hears_a_large_results_status_and_tasks_get_has_the_result(make_server, registry):
    server = make_server({"MCP_TASK_MAX_NOTIFICATION_BYTES": "1024"}, registry=registry)
    alice = Client(server, "alice")
    small = alice.call("sized", size=100, seconds=0.2)["taskId"]
    large = alice.call("sized", size=5000, seconds=0.2)["taskId"]
    stream = server.listeners.open("L", "alice", {"taskIds": [small, large]}, lambda uri: True, tasks=True)
    try:
        notes = {note["params"]["taskId"]: note["params"] for note in (
            loads(stream.get(WAIT_S)[1]), loads(stream.get(WAIT_S)[1]))}
        assert notes[small]["result"]["content"][0]["text"] == "x" * 100
        assert notes[large]["status"] == "completed"
        assert "result" not in notes[large]
        assert alice.get(large)["result"]["content"][0]["text"] == "x" * 5000
    finally:
        stream.close()


def test_a_task_past_the_bytes_every_task_may_take_together_is_32004_and_says_which_bound(make_server, registry):
    server = make_server({"MCP_TASKS_MAX_BYTES": "10000"}, registry=registry)
    for principal in ("alice", "bob"):
        assert Client(server, principal).call("sized", note="n" * 3000)["resultType"] == "task"
    refused = Client(server, "carol")("tools/call", name="sized", arguments={"note": "n" * 3000})
    assert code_of(refused) == -32004
    assert "MCP_TASKS_MAX_BYTES" in refused["error"]["message"]
    assert "MCP_TASK_MAX_PER_PRINCIPAL" not in refused["error"]["message"]
    assert len(server.tasks.store.tasks) == 2

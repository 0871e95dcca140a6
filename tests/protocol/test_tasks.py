"""The tasks extension through the server, as the 2026-07-28 wire sends it: each method, each error, each bound.

Requests go through `Server.handle_request` with an ephemeral session built from their _meta, exactly as
stateless/http.py does, so results come back decorated (resultType) as the wire answers them.
"""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.stateless.metadata import ephemeral_session
from flask_mcp_gevent.tasks.runner import SHUTDOWN_MESSAGE
from flask_mcp_gevent.tasks.shapes import TASKS_EXTENSION
from mcp_tools import ProtocolError, Registry, RegistryError, tool
from tests.support.tasks_client import WAIT_S, WITH_TASKS, WITHOUT_TASKS, Client, code_of
from tests.support.waiting import wait_until

NO_ARGUMENTS = {"type": "object", "properties": {}}


@tool(input_schema=NO_ARGUMENTS, task="required")
def quick() -> str:
    """Answer at once; only ever as a task on the stateless wire."""
    return "done"


@tool(input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}}, task="optional")
def sleepy(seconds: float = 0) -> str:
    """Sleep, then say so."""
    gevent.sleep(seconds)
    return f"slept {seconds}"


@tool(input_schema=NO_ARGUMENTS, task="optional")
def asker(ctx) -> str:
    """Ask the user for a name."""
    answer = ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="name")
    return f"Hello, {answer.get('content', {}).get('name')}"


@tool(input_schema={"type": "object", "properties": {"size": {"type": "integer"}}}, task="optional")
def big(size: int = 10) -> str:
    """Return size characters."""
    return "x" * size


@tool(input_schema=NO_ARGUMENTS, task="optional")
def refuses() -> str:
    """Fail with a JSON-RPC error."""
    raise ProtocolError("cannot serve this", code=-32602, data={"why": "test"})


@pytest.fixture
def registry() -> Registry:
    """Only the tools above."""
    found = Registry()
    for fn in (quick, sleepy, asker, big, refuses):
        found.add_function(fn)
    return found


@pytest.fixture
def client(server) -> Client:
    """A client of principal alice that declares the extension."""
    return Client(server, "alice")


def test_a_task_is_created_polled_and_completed_with_its_result_inlined(client):
    created = client.call("sleepy", seconds=0.2)
    assert created["resultType"] == "task"
    assert set(created) >= {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
    assert not {"result", "error", "inputRequests", "requestState", "task"} & set(created)
    assert (created["status"], created["ttlMs"], created["pollIntervalMs"]) == ("working", 3_600_000, 1000)
    working = client.get(created["taskId"])
    assert (working["resultType"], working["status"]) == ("complete", "working")
    assert "result" not in working
    done = client.until(created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["content"] == [{"type": "text", "text": "slept 0.2"}]
    assert done["result"]["isError"] is False


def test_discover_announces_the_extension(client):
    capabilities = client("server/discover")["result"]["capabilities"]
    assert capabilities["extensions"] == {TASKS_EXTENSION: {}}
    assert "tasks" not in capabilities


def test_a_required_task_tool_without_the_extension_is_32021_naming_it(server):
    response = Client(server, "alice", WITHOUT_TASKS)("tools/call", name="quick", arguments={})
    assert code_of(response) == -32021
    assert response["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


def test_an_optional_task_tool_without_the_extension_runs_at_once(server):
    result = Client(server, "alice", WITHOUT_TASKS).call("sleepy", seconds=0)
    assert (result["resultType"], result["content"][0]["text"]) == ("complete", "slept 0")
    assert "taskId" not in result


def test_a_handshake_era_session_runs_a_required_task_tool_as_a_plain_call(make_rpc):
    rpc = make_rpc("2025-11-25")
    response = rpc.request("tools/call", {"name": "quick", "arguments": {}})
    assert response["result"]["content"] == [{"type": "text", "text": "done"}]
    assert "taskId" not in response["result"]


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_tasks_methods_without_the_extension_are_32021(server, client, method):
    task_id = client.call("quick")["taskId"]
    response = Client(server, "alice", WITHOUT_TASKS)(method, taskId=task_id, inputResponses={})
    assert code_of(response) == -32021
    assert response["error"]["data"]["requiredCapabilities"] == {"extensions": {TASKS_EXTENSION: {}}}


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_another_principals_task_is_as_unknown_as_a_made_up_id(server, client, method):
    task_id = client.call("sleepy", seconds=5)["taskId"]
    foreign = Client(server, "mallory")(method, taskId=task_id, inputResponses={})
    anonymous = Client(server, None)(method, taskId=task_id, inputResponses={})
    unknown = client(method, taskId="no-such-task", inputResponses={})
    assert code_of(foreign) == code_of(anonymous) == code_of(unknown) == -32602
    assert foreign["error"]["message"] == unknown["error"]["message"]
    assert client.get(task_id)["status"] == "working"


@pytest.mark.parametrize("task_id", [None, 7, "", "x" * 201])
def test_a_missing_or_malformed_task_id_is_32602(client, task_id):
    params = {} if task_id is None else {"taskId": task_id}
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        assert code_of(client(method, **params, inputResponses={})) == -32602


def test_input_required_then_update_resumes_the_task_to_completion(client):
    task_id = client.call("asker")["taskId"]
    waiting = client.until(task_id, ("input_required",))
    assert waiting["inputRequests"]["name"]["method"] == "elicitation/create"
    ack = client("tasks/update", taskId=task_id, inputResponses={"name": {"action": "accept",
                                                                          "content": {"name": "Ada"}}})
    assert ack["result"] == {"resultType": "complete", "_meta": ack["result"]["_meta"]}
    done = client.until(task_id)
    assert (done["status"], done["result"]["content"][0]["text"]) == ("completed", "Hello, Ada")


def test_update_refuses_malformed_input_responses_and_ignores_unasked_keys(client):
    task_id = client.call("asker")["taskId"]
    client.until(task_id, ("input_required",))
    assert code_of(client("tasks/update", taskId=task_id)) == -32602
    assert code_of(client("tasks/update", taskId=task_id, inputResponses=[1])) == -32602
    assert code_of(client("tasks/update", taskId=task_id, inputResponses={"name": {"action": "maybe"}})) == -32602
    assert "result" in client("tasks/update", taskId=task_id, inputResponses={"other": {"action": "accept"}})
    assert sorted(client.get(task_id)["inputRequests"]) == ["name"]


def test_cancel_stops_a_running_task_which_ends_cancelled_and_cancel_again_is_an_ack(client, server):
    task_id = client.call("sleepy", seconds=30)["taskId"]
    assert client("tasks/cancel", taskId=task_id)["result"]["resultType"] == "complete"
    assert client.get(task_id)["status"] == "cancelled"
    wait_until(lambda: not server.tasks.running, timeout=WAIT_S)
    assert "result" in client("tasks/cancel", taskId=task_id)
    assert client.get(task_id)["status"] == "cancelled"


def test_a_protocol_error_fails_the_task_with_that_error(client):
    failed = client.until(client.call("refuses")["taskId"])
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": -32602, "message": "cannot serve this", "data": {"why": "test"}}
    assert "result" not in failed


def test_past_the_tasks_per_principal_bound_a_call_is_32004(make_server, registry):
    server = make_server({"MCP_TASK_MAX_PER_PRINCIPAL": "2"}, registry=registry)
    alice = Client(server, "alice")
    alice.call("quick")
    alice.call("quick")
    refused = alice("tools/call", name="quick", arguments={})
    assert code_of(refused) == -32004
    assert "MCP_TASK_MAX_PER_PRINCIPAL" in refused["error"]["message"]
    assert Client(server, "bob").call("quick")["resultType"] == "task"


def test_a_result_over_the_bytes_bound_fails_the_task_clearly(make_server, registry):
    server = make_server({"MCP_TASK_MAX_RESULT_BYTES": "1024"}, registry=registry)
    alice = Client(server, "alice")
    small = alice.until(alice.call("big", size=200)["taskId"])
    large = alice.until(alice.call("big", size=2000)["taskId"])
    assert small["status"] == "completed"
    assert (large["status"], large["error"]["code"]) == ("failed", -32603)
    assert "MCP_TASK_MAX_RESULT_BYTES" in large["statusMessage"]


def test_the_ttl_is_the_default_or_the_asked_one_never_past_the_max(make_server, registry):
    server = make_server({"MCP_TASK_TTL_S": "60", "MCP_TASK_MAX_TTL_S": "120"}, registry=registry)
    alice = Client(server, "alice")
    assert alice.call("quick")["ttlMs"] == 60_000
    assert alice("tools/call", name="quick", arguments={}, task={"ttl": 90_000})["result"]["ttlMs"] == 90_000
    assert alice("tools/call", name="quick", arguments={}, task={"ttl": 10**9})["result"]["ttlMs"] == 120_000


def test_a_task_and_its_result_are_gone_after_the_ttl(make_server, registry):
    # A second to live: a loaded machine must still read the result back before it goes.
    server = make_server({"MCP_TASK_TTL_S": "1.0"}, registry=registry)
    alice = Client(server, "alice")
    task_id = alice.call("quick")["taskId"]
    assert alice.until(task_id)["status"] == "completed"
    gevent.sleep(1.3)
    assert code_of(alice("tasks/get", taskId=task_id)) == -32602


def test_a_task_whose_worker_stopped_renewing_fails_within_the_lease(make_server, registry):
    server = make_server({"MCP_TASK_LEASE_S": "1.0"}, registry=registry)
    alice = Client(server, "alice")
    task_id = alice.call("sleepy", seconds=30)["taskId"]
    gevent.sleep(1.5)
    assert alice.get(task_id)["status"] == "working"  # renewed while it runs, past one lease
    # The worker "dies": its greenlets stop without writing anything.
    server.tasks._renewer.kill()
    for greenlet in list(server.tasks.running.values()):
        greenlet.kill()
    failed = alice.until(task_id)
    assert (failed["status"], failed["error"]["code"]) == ("failed", -32603)
    assert "lease expired" in failed["statusMessage"]


def test_drain_lets_short_tasks_finish_and_fails_the_rest(client, server):
    short = client.call("sleepy", seconds=0.1)["taskId"]
    long = client.call("sleepy", seconds=30)["taskId"]
    assert server.tasks.drain(timeout=0.5) == 1
    assert client.get(short)["status"] == "completed"
    stopped = client.get(long)
    assert (stopped["status"], stopped["statusMessage"]) == ("failed", SHUTDOWN_MESSAGE)


def test_task_notifications_reach_listen_streams_of_the_tasks_principal_only(client, server):
    task_id = client.call("sleepy", seconds=0.2)["taskId"]
    mine = server.listeners.open("L1", "alice", {"taskIds": [task_id]}, lambda uri: True, tasks=True)
    theirs = server.listeners.open("L2", "mallory", {"taskIds": [task_id]}, lambda uri: True, tasks=True)
    try:
        event = mine.get(WAIT_S)
        note = loads(event[1])
        assert note["method"] == "notifications/tasks"
        assert "principal" not in note
        assert (note["params"]["taskId"], note["params"]["status"]) == (task_id, "completed")
        assert note["params"]["result"]["content"][0]["text"] == "slept 0.2"
        assert theirs.get(0.2) is None
    finally:
        mine.close()
        theirs.close()


def test_listen_for_task_ids_without_the_extension_is_32021(server):
    with pytest.raises(Exception) as refused:
        server.listeners.open("L", "alice", {"taskIds": ["t"]}, lambda uri: True, tasks=False)
    assert refused.value.code == -32021


def test_registration_refuses_an_unknown_task_support():
    with pytest.raises(RegistryError):
        tool(input_schema=NO_ARGUMENTS, task="sometimes")
    with pytest.raises(RegistryError):
        tool(input_schema=NO_ARGUMENTS, ask_before_task=True)


def test_a_task_cancelled_elsewhere_is_stopped_here_at_the_next_renewal(client, server):
    task_id = client.call("sleepy", seconds=30)["taskId"]
    [greenlet] = server.tasks.running.values()
    # Another worker took the tasks/cancel: only the store knows.
    tasks = server.tasks.store
    assert tasks.cancel("alice", task_id, "Cancelled by the client", tasks.now()) is True
    server.tasks.renew_once()
    wait_until(lambda: greenlet.dead, timeout=WAIT_S)
    assert server.tasks.running == {}
    assert client.get(task_id)["status"] == "cancelled"


def test_answers_past_the_bytes_bound_are_32602_and_leave_the_task_waiting(make_server, registry):
    server = make_server({"MCP_TASK_MAX_RESULT_BYTES": "1024"}, registry=registry)
    alice = Client(server, "alice")
    task_id = alice.call("asker")["taskId"]
    alice.until(task_id, ("input_required",))
    huge = {"name": {"action": "accept", "content": {"name": "x" * 2000}}}
    refused = alice("tasks/update", taskId=task_id, inputResponses=huge)
    assert code_of(refused) == -32602
    assert "MCP_TASK_MAX_RESULT_BYTES" in refused["error"]["message"]
    assert sorted(alice.get(task_id)["inputRequests"]) == ["name"]


def test_arguments_that_are_not_an_object_are_32602_and_make_no_task(client, server):
    refused = client("tools/call", name="sleepy", arguments=[1])
    assert code_of(refused) == -32602
    assert server.tasks.store.tasks == {}


def test_a_listener_hears_of_a_task_whose_worker_died_without_polling(make_server, registry):
    server = make_server({"MCP_TASK_LEASE_S": "0.3", "MCP_KEEPALIVE_S": "0.2"}, registry=registry)
    alice = Client(server, "alice")
    task_id = alice.call("sleepy", seconds=30)["taskId"]
    heard: list[dict] = []
    listen = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {
        "notifications": {"taskIds": [task_id]},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": WITH_TASKS}}}
    message = parse_body(dumps(listen)).messages[0]
    listener = gevent.spawn(server.handle_request, ephemeral_session(message.meta, "alice"), message, heard.append)
    try:
        wait_until(lambda: heard, timeout=WAIT_S)  # the acknowledgment
        server.tasks._renewer.kill()
        for greenlet in list(server.tasks.running.values()):
            greenlet.kill()
        wait_until(lambda: any(m.get("method") == "notifications/tasks" for m in heard), timeout=WAIT_S)
        [note] = [m for m in heard if m.get("method") == "notifications/tasks"]
        assert (note["params"]["taskId"], note["params"]["status"]) == (task_id, "failed")
        assert "lease expired" in note["params"]["statusMessage"]
    finally:
        listener.kill()

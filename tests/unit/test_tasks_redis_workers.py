"""Tasks on two Redis workers (two servers, one real redis-server): read, answered and announced on another.

The e2e test runs the same across two gunicorn hosts; this one looks inside: which worker runs the task after
tasks/update, and that notifications/tasks reach a listen stream on the worker that did not run it, once.
"""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.encoding import loads
from flask_mcp_gevent.server import Server
from mcp_tools import Registry, tool
from tests.support.tasks_client import WAIT_S, Client
from tests.support.waiting import wait_until


@tool(input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}}, task="optional")
def nap(seconds: float = 0) -> str:
    """Sleep, then say so."""
    gevent.sleep(seconds)
    return f"napped {seconds}"


@tool(input_schema={"type": "object", "properties": {}}, task="optional")
def name_please(ctx) -> str:
    """Ask for a name."""
    answer = ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}, key="name")
    gevent.sleep(0.3)
    return f"Hello, {answer['content']['name']}"


@pytest.fixture
def workers(redis_stores):
    """Two servers, each on its own RedisStore of the same redis-server."""
    registry = Registry()
    registry.add_function(nap)
    registry.add_function(name_please)
    servers = []
    for _ in range(2):
        store = redis_stores()
        servers.append(Server(store.settings, registry=registry, store=store))
        assert wait_until(store.fleet.ready, timeout=WAIT_S)
    yield servers
    for server in servers:
        server.shutdown()


def test_a_task_run_on_one_worker_is_read_and_announced_on_the_other(workers):
    first, second = workers
    task_id = Client(first, "alice").call("nap", seconds=0.3)["taskId"]
    stream = second.listeners.open("L", "alice", {"taskIds": [task_id]}, lambda uri: True, tasks=True)
    try:
        assert Client(second, "alice").get(task_id)["status"] == "working"
        assert Client(second, "bob")("tasks/get", taskId=task_id)["error"]["code"] == -32602
        note = loads(stream.get(WAIT_S)[1])
        assert (note["method"], note["params"]["status"]) == ("notifications/tasks", "completed")
        assert note["params"]["result"]["content"][0]["text"] == "napped 0.3"
        assert stream.get(0.3) is None  # once
        assert Client(second, "alice").get(task_id)["status"] == "completed"
    finally:
        stream.close()


def test_the_worker_that_takes_the_last_answer_runs_the_task_on(workers):
    first, second = workers
    task_id = Client(first, "alice").call("name_please")["taskId"]
    Client(second, "alice").until(task_id, ("input_required",))
    assert first.tasks.running == {}
    ack = Client(second, "alice")("tasks/update", taskId=task_id,
                                  inputResponses={"name": {"action": "accept", "content": {"name": "Ada"}}})
    assert "result" in ack
    assert (list(first.tasks.running), list(second.tasks.running)) == ([], [("alice", task_id)])
    done = Client(first, "alice").until(task_id)
    assert (done["status"], done["result"]["content"][0]["text"]) == ("completed", "Hello, Ada")
    record, _ = second.tasks.store.get("alice", task_id, second.tasks.store.now(), ("", ""))
    assert record.answers == {"name": '{"action":"accept","content":{"name":"Ada"}}'}

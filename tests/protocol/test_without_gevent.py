"""Serving without gevent (flask_mcp_gevent/without_gevent.py): which requests mark their thread, what is refused at
once there (a question no stream can carry, a task that would never run) and what runs as it would elsewhere.

Each request runs in a thread of its own, marked as ConnectionLimit marks it, as a threaded server runs it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gevent._hub_local import get_hub_if_exists

from flask_mcp_gevent.without_gevent import (
    GEVENT_WORKER,
    ONE_THREAD,
    SERVED,
    THREADS,
    begin_request,
    end_request,
    question_refusal,
    server_without_gevent,
)
from mcp_tools import Registry, tool
from tests.support.tasks_client import WITH_TASKS, Client, code_of

WERKZEUG_THREADED = {"wsgi.multithread": True, "SERVER_SOFTWARE": "Werkzeug/3"}
GUNICORN_SYNC = {"wsgi.multithread": False, "SERVER_SOFTWARE": "gunicorn/23"}
TEST_CLIENT = {"wsgi.multithread": False}
JOIN_S = 10.0
NO_ARGUMENTS = {"type": "object", "properties": {}}


@tool(input_schema=NO_ARGUMENTS, task="required")
def only_as_task() -> str:
    """Runs only as a task."""
    return "done"


@tool(input_schema=NO_ARGUMENTS, task="optional")
def maybe_as_task() -> str:
    """May run as a task."""
    return "done at once"


@tool(input_schema=NO_ARGUMENTS)
def asks(ctx) -> str:
    """Ask the user for a name."""
    return str(ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}}))


@pytest.fixture
def registry() -> Registry:
    """Only the tools above."""
    found = Registry()
    for fn in (only_as_task, maybe_as_task, asks):
        found.add_function(fn)
    return found


def served(work: Callable[[], Any], kind: str = THREADS) -> dict[str, Any]:
    """Run work as a request in a new thread (begin_request .. end_request); its value, and what the thread saw."""
    seen: dict[str, Any] = {}

    def serve() -> None:
        begin_request(kind)
        try:
            seen["value"] = work()
        except Exception as failure:  # re-raised in the test's own thread
            seen["failure"] = failure
        finally:
            end_request()
            seen["marked_after"] = SERVED.without_gevent
            seen["hub_after"] = get_hub_if_exists()

    thread = threading.Thread(target=serve)
    thread.start()
    thread.join(JOIN_S)
    assert not thread.is_alive(), "the request did not finish in time"
    if "failure" in seen:
        raise seen["failure"]
    return seen


@pytest.mark.parametrize(("environ", "kind"), [(WERKZEUG_THREADED, THREADS), (GUNICORN_SYNC, ONE_THREAD),
                                               (TEST_CLIENT, None)])
def test_a_server_that_is_not_gevents_is_told_apart_from_flasks_test_client(environ, kind):
    assert server_without_gevent(environ) == kind  # these tests run unpatched, as flask run does


def test_a_request_marks_its_thread_until_it_ends_and_then_destroys_the_hub_it_made():
    def make_a_hub() -> str | None:
        import gevent

        gevent.sleep(0)  # as any request that spawns a greenlet or starts a timer does
        return SERVED.without_gevent

    seen = served(make_a_hub)
    assert seen["value"] == THREADS
    assert seen["marked_after"] is None and seen["hub_after"] is None
    assert SERVED.without_gevent is None  # a thread-local: the test's own thread was never marked


# Run in a process gevent has patched, as its worker is: the tests themselves run unpatched.
READ_IN_GREENLETS = """
from gevent import monkey
monkey.patch_all()
import gevent
from flask_mcp_gevent.without_gevent import SERVED
readers = [gevent.spawn(lambda: SERVED.without_gevent) for _ in range(3)]
gevent.joinall(readers)
print([reader.value for reader in readers], sorted({name for reader in readers for name in vars(reader)}))
"""


def test_under_gevent_a_greenlet_that_reads_the_mark_gets_no_local_of_its_own():
    # A greenlet-local would leave each connection's greenlet a dict and weakref callbacks for its whole life.
    done = subprocess.run([sys.executable, "-c", READ_IN_GREENLETS], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2], check=True)
    assert done.stdout.strip() == "[None, None, None] []"


def test_a_question_on_the_requests_own_stream_may_go_out_in_a_threaded_server():
    assert served(lambda: question_refusal("elicitation/create", own_stream=True))["value"] is None
    assert question_refusal("elicitation/create", own_stream=False) is None  # not a marked thread: as ever


def test_a_question_without_a_stream_is_refused_naming_the_gevent_worker():
    refusal = served(lambda: question_refusal("sampling/createMessage", own_stream=False))["value"]
    assert "Cannot send sampling/createMessage to the client" in refusal.message
    assert "GET stream" in refusal.message and GEVENT_WORKER in refusal.message


def test_any_question_is_refused_where_the_server_has_one_thread():
    refusal = served(lambda: question_refusal("roots/list", own_stream=True), ONE_THREAD)["value"]
    assert "only thread" in refusal.message and GEVENT_WORKER in refusal.message


def test_a_tool_that_asks_from_a_request_answered_as_json_fails_at_once(make_rpc):
    rpc = make_rpc()
    rpc.initialize("2025-11-25", capabilities={"elicitation": {}})
    response = served(lambda: rpc.request("tools/call", {"name": "asks", "arguments": {}}))["value"]
    assert response["result"]["isError"] is True
    assert "Cannot send elicitation/create" in response["result"]["content"][0]["text"]


def test_a_tool_that_runs_only_as_a_task_is_refused_naming_the_gevent_worker(server):
    client = Client(server, "alice", WITH_TASKS)
    response = served(lambda: client("tools/call", name="only_as_task", arguments={}))["value"]
    assert code_of(response) == -32004
    assert "runs only as a task" in response["error"]["message"] and GEVENT_WORKER in response["error"]["message"]


def test_a_tool_that_may_run_as_a_task_runs_at_once(server):
    client = Client(server, "alice", WITH_TASKS)
    result = served(lambda: client.call("maybe_as_task"))["value"]
    assert result["resultType"] == "complete" and result["content"][0]["text"] == "done at once"
    # Elsewhere the same request becomes a task.
    assert client.call("maybe_as_task")["resultType"] == "task"

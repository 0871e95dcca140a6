"""Past one process: several workers, and two "hosts" (gunicorn instances) sharing one Redis.

A client's GET stream and its POSTs may land on different workers or hosts; the
answers, the client's replies to server requests, cancellations and broadcasts
still reach the right place. The two-instance tests make the cross-host case
deterministic: the stream is held by one instance, the POSTs go to the other,
which is what a load balancer without sticky sessions does.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flask_mcp_gevent.store.redis_keys import session_keys
from tests.e2e.raw_clients import (
    BOTH,
    LegacyStream,
    call_tool,
    client,
    initialize,
    notification,
    request,
)
from tests.e2e.server_process import ServerProcess
from tests.e2e.sse_client import iter_events
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

PLUGINS = "tests.e2e.plugins.scale_tools,tests.e2e.plugins.feature_tools"
SERVER_CAPABILITIES = {"sampling": {}, "elicitation": {}}
STREAMABLE_VERSION = "2025-06-18"


@pytest.fixture(scope="module")
def redis_env(redis_server) -> dict[str, str]:  # noqa: F811
    """Settings every server in this module shares: one Redis, the scale-out test tools."""
    return {"MCP_REDIS_URL": redis_server.url, "MCP_PLUGINS": PLUGINS}


@pytest.fixture(scope="module")
def fleet(redis_env) -> Iterator[ServerProcess]:
    """gunicorn with two workers on Redis."""
    with ServerProcess(env=redis_env, workers=2) as server:
        yield server


@pytest.fixture(scope="module")
def hosts(redis_env) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two gunicorn instances on different ports sharing one Redis: two hosts on one machine."""
    with ServerProcess(env=redis_env) as first, ServerProcess(env=redis_env) as second:
        yield first, second


@pytest.fixture
def fresh_connections() -> Iterator[httpx.Client]:
    """A client that opens a new connection per request, so the kernel spreads them over workers."""
    with httpx.Client(timeout=httpx.Timeout(15.0, connect=5.0),
                      limits=httpx.Limits(max_keepalive_connections=0)) as http:
        yield http


class Session:
    """A legacy session whose GET stream is held on one server and whose POSTs go to any server."""

    def __init__(self, http: httpx.Client, home: ServerProcess) -> None:
        self.http = http
        self.stream = LegacyStream(http, home.base_url)
        self.id = self.stream.session_id

    def post(self, server: ServerProcess, message: Any, http: httpx.Client | None = None) -> httpx.Response:
        """POST a message to this session's endpoint on server."""
        return (http or self.http).post(server.base_url + self.stream.endpoint_data, json=message)

    def call(self, server: ServerProcess, message: dict[str, Any], http: httpx.Client | None = None) -> dict:
        """POST a request to server and return its response from the stream."""
        posted = self.post(server, message, http)
        assert posted.status_code == 202, (posted.status_code, posted.text)
        return self.stream.wait_for(message["id"])

    def open(self, server: ServerProcess, capabilities: dict[str, Any] | None = None) -> None:
        """Initialize through server, declaring capabilities."""
        hello = initialize("2024-11-05")
        hello["params"]["capabilities"] = capabilities or {}
        assert "result" in self.call(server, hello)
        assert self.post(server, notification("notifications/initialized")).status_code == 202

    def next_message(self) -> dict[str, Any]:
        """The next JSON-RPC message on the stream."""
        return self.stream.next_event().json()

    def close(self) -> None:
        """Drop the stream."""
        self.stream.close()


def tool_text(response: dict[str, Any]) -> str:
    """The text of a tools/call result."""
    assert "result" in response, response
    return response["result"]["content"][0]["text"]


def stream_owner_pid(redis_client, session_id: str) -> int:
    """The pid of the worker whose stream holds session_id, as recorded in Redis."""
    owner = redis_client.get(session_keys(session_id).claim)
    assert owner is not None, "no stream attached"
    return int(owner.decode().split("-", 1)[0])


def wait_for_file(path: Path, startswith: str, timeout: float = 10.0) -> str:
    """Poll a state file written by the hold tool until it starts with the expected word."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.startswith(startswith):
            return text
        time.sleep(0.05)
    raise AssertionError(f"{path} says {text!r}, expected {startswith!r}")


def streamable_initialize(http: httpx.Client, server: ServerProcess, capabilities: dict | None = None) -> str:
    """Open a Streamable HTTP session on server; return its id."""
    hello = initialize(STREAMABLE_VERSION)
    hello["params"]["capabilities"] = capabilities or {}
    answer = http.post(server.url, json=hello, headers={"Accept": BOTH})
    assert answer.status_code == 200, answer.text
    session_id = answer.headers["Mcp-Session-Id"]
    done = http.post(server.url, json=notification("notifications/initialized"), headers=streamable_headers(session_id))
    assert done.status_code == 202
    return session_id


def streamable_headers(session_id: str, accept: str = BOTH) -> dict[str, str]:
    """Headers of a Streamable HTTP request on a session."""
    return {"Accept": accept, "Mcp-Session-Id": session_id, "MCP-Protocol-Version": STREAMABLE_VERSION}


# starting
def test_two_workers_without_redis_refuse_to_start_and_say_why():
    server = ServerProcess(env={"MCP_REDIS_URL": ""}, workers=2)
    try:
        with pytest.raises(RuntimeError):
            server.start(timeout=30)
        assert server.proc.wait(10) != 0
        assert "need MCP_REDIS_URL" in server.read_log()
    finally:
        server.stop()
        os.unlink(server.log.name)


# several workers
def open_sessions_on_every_worker(fleet: ServerProcess, http: httpx.Client, per_worker: int) -> list[Session]:
    """Open per_worker legacy sessions on each worker, in worker order."""
    sessions: list[Session] = []
    try:
        for target in fleet.worker_pids() * per_worker:
            with fleet.accepting_only(target):
                sessions.append(Session(http, fleet))
        for session in sessions:
            session.open(fleet)
    except BaseException:
        for session in sessions:
            session.close()
        raise
    return sessions


def test_legacy_calls_are_answered_whichever_worker_they_land_on(fleet, fresh_connections):
    sessions = open_sessions_on_every_worker(fleet, fresh_connections, per_worker=2)
    try:
        # Every session posts a call to every worker, so answers cross both ways between stream and runner.
        posted: list[tuple[Session, dict[str, Any], int]] = []
        for pid in fleet.worker_pids():
            with fleet.accepting_only(pid):
                for session in sessions:
                    message = call_tool("worker_pid", {})
                    assert session.post(fleet, message).status_code == 202
                    posted.append((session, message, pid))
        # Answers are read once every worker runs again: a frozen one may hold the stream they go to.
        ran_on = [int(tool_text(session.stream.wait_for(message["id"]))) for session, message, _ in posted]
    finally:
        for session in sessions:
            session.close()
    assert ran_on == [pid for _, _, pid in posted]


def test_broadcast_reaches_streams_on_every_worker(fleet, redis_server, fresh_connections):  # noqa: F811
    redis_client = redis_server.client()
    # New connections only: a kept-alive one could belong to a frozen worker.
    sessions = open_sessions_on_every_worker(fleet, fresh_connections, per_worker=2)
    try:
        owners = [stream_owner_pid(redis_client, s.id) for s in sessions]
        assert owners == fleet.worker_pids() * 2
        trigger = sessions[0]
        answer = trigger.call(fleet, call_tool("change_registry", {"kind": "tool", "action": "add",
                                                                   "name": "rt-fanout"}))
        assert "added" in tool_text(answer)
        for session in sessions[1:]:
            assert session.next_message()["method"] == "notifications/tools/list_changed"
    finally:
        for session in sessions:
            session.close()


def test_get_on_one_host_and_posts_on_the_other(hosts):
    home, away = hosts
    away_pid = away.worker_pids()[0]
    with client() as http:
        session = Session(http, home)
        try:
            session.open(away)
            for n in range(20):
                assert tool_text(session.call(away, call_tool("echo", {"text": f"hello {n}"}))) == f"hello {n}"
            assert int(tool_text(session.call(away, call_tool("worker_pid", {})))) == away_pid
        finally:
            session.close()


def test_streamable_session_moves_between_hosts(hosts):
    home, away = hosts
    with client() as http:
        session_id = streamable_initialize(http, home)
        answer = http.post(away.url, json=call_tool("add", {"a": 2, "b": 3}),
                           headers=streamable_headers(session_id, "application/json"))
        assert answer.status_code == 200 and tool_text(answer.json()) == "5"
        # The standalone stream on one host gets what a call on the other host sends outside its answer.
        with http.stream("GET", away.url, headers=streamable_headers(session_id, "text/event-stream")) as stream:
            assert stream.status_code == 200
            events = iter_events(stream)
            entries = [{"level": "info", "data": f"line {n}"} for n in range(3)]
            logged = http.post(home.url, json=call_tool("log_entries", {"entries": entries}),
                               headers=streamable_headers(session_id, "application/json"))
            assert logged.status_code == 200
            got = [next(events).json()["params"]["data"] for _ in range(3)]
            assert got == ["line 0", "line 1", "line 2"]
        assert http.delete(away.url, headers=streamable_headers(session_id)).status_code == 204
        gone = http.post(home.url, json=request("ping"), headers=streamable_headers(session_id))
        assert gone.status_code == 404


def test_standalone_stream_resumes_on_the_other_host_with_last_event_id(hosts):
    home, away = hosts
    with client() as http:
        session_id = streamable_initialize(http, home)

        def log_lines(*labels: str) -> None:
            entries = [{"level": "info", "data": label} for label in labels]
            answer = http.post(away.url, json=call_tool("log_entries", {"entries": entries}),
                               headers=streamable_headers(session_id, "application/json"))
            assert answer.status_code == 200

        with http.stream("GET", home.url, headers=streamable_headers(session_id, "text/event-stream")) as stream:
            events = iter_events(stream)
            log_lines("a", "b", "c")
            first = next(events)
            assert first.json()["params"]["data"] == "a"
        log_lines("d", "e")  # produced while no stream is attached
        headers = {**streamable_headers(session_id, "text/event-stream"), "Last-Event-ID": first.id}
        with http.stream("GET", away.url, headers=headers) as resumed:
            assert resumed.status_code == 200
            events = iter_events(resumed)
            got = [next(events) for _ in range(4)]
            assert [event.json()["params"]["data"] for event in got] == ["b", "c", "d", "e"]
            assert len({event.id for event in got} | {first.id}) == 5


@pytest.mark.parametrize("kind, method", [("sample", "sampling/createMessage"), ("elicit", "elicitation/create")])
def test_client_answer_posted_to_the_other_host_wakes_the_waiting_tool(hosts, kind, method):
    home, away = hosts
    with client() as http:
        session = Session(http, home)
        try:
            session.open(home, SERVER_CAPABILITIES)
            call = call_tool("ask_client", {"kind": kind})
            assert session.post(home, call).status_code == 202
            asked = session.next_message()
            assert asked["method"] == method
            answer = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"} \
                if kind == "sample" else {"action": "accept", "content": {"name": "Ada"}}
            posted = session.post(away, {"jsonrpc": "2.0", "id": asked["id"], "result": answer})
            assert posted.status_code == 202
            result = json.loads(tool_text(session.stream.wait_for(call["id"])))
            assert result == {"answer": answer, "pid": home.worker_pids()[0]}
        finally:
            session.close()


def test_client_answer_to_a_streamed_call_can_go_to_the_other_host(hosts):
    home, away = hosts
    with client() as http:
        session_id = streamable_initialize(http, home, SERVER_CAPABILITIES)
        call = call_tool("ask_client", {"kind": "elicit"})
        with http.stream("POST", home.url, json=call, headers=streamable_headers(session_id)) as answer_stream:
            assert answer_stream.headers["content-type"].startswith("text/event-stream")
            events = iter_events(answer_stream)
            asked = next(events).json()
            assert asked["method"] == "elicitation/create"
            reply = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}
            assert http.post(away.url, json=reply, headers=streamable_headers(session_id)).status_code == 202
            response = next(events).json()
        assert response["id"] == call["id"]
        assert response["result"]["structuredContent"]["answer"] == {"action": "decline"}


def test_cancel_posted_to_the_other_host_stops_the_call_without_an_answer(hosts, tmp_path):
    home, away = hosts
    state = tmp_path / "held"
    with client() as http:
        session = Session(http, home)
        try:
            session.open(home)
            call = call_tool("hold", {"path": str(state), "seconds": 30})
            assert session.post(home, call).status_code == 202
            assert wait_for_file(state, "running") == f"running {home.worker_pids()[0]}"
            cancel = notification("notifications/cancelled", {"requestId": call["id"], "reason": "user"})
            assert session.post(away, cancel).status_code == 202
            wait_for_file(state, "cancelled", timeout=5.0)
            ping = request("ping")
            assert session.post(home, ping).status_code == 202
            # The next response on the stream is the ping's: the cancelled call sent none.
            assert session.next_message()["id"] == ping["id"]
        finally:
            session.close()


def test_cancel_posted_to_the_other_host_ends_a_streamable_call(hosts, tmp_path):
    home, away = hosts
    state = tmp_path / "held"
    with client() as http:
        session_id = streamable_initialize(http, home)
        call = call_tool("hold", {"path": str(state), "seconds": 30})
        outcome: dict[str, Any] = {}

        def post_call() -> None:
            with client() as own:
                answer = own.post(home.url, json=call, headers=streamable_headers(session_id, "application/json"))
                outcome["status"], outcome["body"] = answer.status_code, answer.content

        caller = threading.Thread(target=post_call)
        caller.start()
        try:
            wait_for_file(state, "running")
            cancel = notification("notifications/cancelled", {"requestId": call["id"]})
            assert http.post(away.url, json=cancel, headers=streamable_headers(session_id)).status_code == 202
            wait_for_file(state, "cancelled", timeout=5.0)
        finally:
            caller.join(timeout=20)
        assert outcome == {"status": 202, "body": b""}


def test_resource_update_on_one_host_reaches_a_subscriber_on_the_other(hosts):
    home, away = hosts
    uri = "config://server"
    with client() as http:
        watcher, toucher = Session(http, home), Session(http, away)
        try:
            watcher.open(home)
            toucher.open(away)
            assert watcher.call(away, request("resources/subscribe", {"uri": uri}))["result"] == {}
            assert "touched" in tool_text(toucher.call(away, call_tool("touch_resource", {"uri": uri})))
            update = watcher.next_message()
            assert update == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
        finally:
            watcher.close()
            toucher.close()

"""Streamable HTTP by raw HTTP: sessions, JSON or SSE answers, Accept and version headers."""

from __future__ import annotations

import time

import pytest

from tests.e2e.conftest import SHORT_SESSION_TTL_S
from tests.e2e.raw_clients import BOTH, StreamableSession, call_tool, client, initialize, request
from tests.e2e.sse_client import iter_events

pytestmark = pytest.mark.e2e

SUPPORTED = ("2025-03-26", "2025-06-18", "2025-11-25")


@pytest.fixture
def http():
    """A bounded httpx client for one test."""
    with client() as http:
        yield http


@pytest.mark.parametrize("version", SUPPORTED)
def test_initialize_opens_a_session_with_a_visible_ascii_id(server, http, version):
    answer = http.post(server.url, json=initialize(version), headers={"Accept": BOTH})
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    session_id = answer.headers["Mcp-Session-Id"]
    assert len(session_id) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in session_id)
    result = answer.json()["result"]
    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] and "tools" in result["capabilities"]
    http.delete(server.url, headers={"Mcp-Session-Id": session_id})


def test_unknown_requested_version_gets_the_latest(server, http):
    answer = http.post(server.url, json=initialize("2099-01-01"), headers={"Accept": BOTH})
    assert answer.json()["result"]["protocolVersion"] == "2025-11-25"
    http.delete(server.url, headers={"Mcp-Session-Id": answer.headers["Mcp-Session-Id"]})


def test_each_initialize_opens_a_distinct_session(server, http):
    first, second = StreamableSession(http, server.url), StreamableSession(http, server.url)
    assert first.session_id != second.session_id
    first.delete()
    assert second.call(request("ping"))["result"] == {}
    second.delete()


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_full_session_lists_tools_and_calls_each_one(server, http, version):
    session = StreamableSession(http, server.url, version)
    tools = {tool["name"]: tool for tool in session.call(request("tools/list"))["result"]["tools"]}
    assert {"add", "echo", "get_time"} <= set(tools)
    assert tools["add"]["outputSchema"]["required"] == ["result"]
    added = session.call(call_tool("add", {"a": 20, "b": 22}))["result"]
    assert added == {"content": [{"type": "text", "text": "42"}], "structuredContent": {"result": 42},
                     "isError": False}
    echoed = session.call(call_tool("echo", {"text": "round trip"}))["result"]
    assert echoed["structuredContent"] == {"result": "round trip"}
    timed = session.call(call_tool("get_time", {}))["result"]
    assert timed["content"][0]["text"] == timed["structuredContent"]["result"]
    session.delete()


def test_2025_03_26_results_have_no_structured_content(server, http):
    session = StreamableSession(http, server.url, "2025-03-26")
    added = session.call(call_tool("add", {"a": 1, "b": 2}))["result"]
    assert added["content"] == [{"type": "text", "text": "3"}] and "structuredContent" not in added
    tools = session.call(request("tools/list"))["result"]["tools"]
    assert all("outputSchema" not in tool for tool in tools)
    session.delete()


def test_result_only_call_is_answered_as_json_even_when_sse_is_allowed(server, http):
    session = StreamableSession(http, server.url)
    message = call_tool("echo", {"text": "json please"})
    answer = session.post(message, accept=BOTH)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json()["id"] == message["id"]
    session.delete()


def test_call_that_logs_first_is_answered_as_an_event_stream(tuned_server, http):
    session = StreamableSession(http, tuned_server.url)
    message = call_tool("log_messages", {"label": "s", "count": 2})
    with http.stream("POST", session.url, json=message, headers={"Accept": BOTH, **session.headers}) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert answer.headers["cache-control"] == "no-cache"
        events = list(iter_events(answer))
    assert [event.event for event in events] == ["message"] * 3
    assert all(event.id for event in events) and len({event.id for event in events}) == 3
    notes, response = [event.json() for event in events[:2]], events[2].json()
    assert [note["params"]["data"]["tag"] for note in notes] == ["s-1", "s-2"]
    assert response["id"] == message["id"] and response["result"]["content"][0]["text"] == "2"
    session.delete()


def test_sse_only_accept_gets_the_result_as_an_event_stream(server, http):
    session = StreamableSession(http, server.url)
    message = request("ping")
    with http.stream("POST", session.url, json=message,
                     headers={"Accept": "text/event-stream", **session.headers}) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        events = list(iter_events(answer))
    assert [event.json() for event in events] == [{"jsonrpc": "2.0", "result": {}, "id": message["id"]}]
    session.delete()


def test_absent_protocol_version_header_is_accepted(server, http):
    session = StreamableSession(http, server.url, "2025-06-18")
    answer = http.post(session.url, json=request("ping"),
                       headers={"Accept": "application/json", "Mcp-Session-Id": session.session_id})
    assert answer.status_code == 200 and answer.json()["result"] == {}
    session.delete()


def test_standalone_stream_delivers_messages_sent_outside_a_request(tuned_server, http):
    session = StreamableSession(http, tuned_server.url)
    with session.open_stream(timeout=10.0) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        session.call(call_tool("log_messages", {"label": "out", "count": 1}))
        event = next(iter_events(stream))
    assert event.event == "message" and event.id
    assert event.json()["params"]["data"]["tag"] == "out-1"
    session.delete()


def test_delete_ends_the_standalone_stream(tuned_server, http):
    session = StreamableSession(http, tuned_server.url)
    with session.open_stream(timeout=10.0) as stream:
        events = iter_events(stream)
        assert session.delete().status_code == 204
        assert list(events) == []


def test_idle_session_expires_after_ttl(short_ttl_server, http):
    session = StreamableSession(http, short_ttl_server.url)
    # Every lookup refreshes a live session, so poll less often than the TTL, within a bounded time.
    deadline = time.monotonic() + 20
    status = None
    while time.monotonic() < deadline:
        time.sleep(SHORT_SESSION_TTL_S * 2.5)
        status = session.post(request("ping"), accept="application/json").status_code
        if status == 404:
            break
        assert status == 200
    assert status == 404

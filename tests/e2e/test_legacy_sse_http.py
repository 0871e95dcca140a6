"""The legacy HTTP+SSE transport (2024-11-05) by raw HTTP: endpoint event, 202s, answers on the stream."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.e2e.conftest import SHORT_SESSION_TTL_S
from tests.e2e.raw_clients import LegacyStream, call_tool, client, notification, request
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e


@pytest.fixture
def http():
    """A bounded httpx client for one test."""
    with client() as http:
        yield http


def test_stream_opens_with_endpoint_event_and_sse_headers(server, http):
    with LegacyStream(http, server.base_url) as stream:
        headers = stream.response.headers
        assert stream.response.status_code == 200
        assert headers["content-type"].startswith("text/event-stream")
        assert headers["cache-control"] == "no-cache"
        assert headers["x-accel-buffering"] == "no"
        assert stream.endpoint_data == f"/mcp?session_id={stream.session_id}"


def test_session_ids_are_unique_128_bit_hex(server, http):
    ids = set()
    for _ in range(5):
        with LegacyStream(http, server.base_url) as stream:
            assert len(stream.session_id) == 32 and int(stream.session_id, 16) >= 0
            ids.add(stream.session_id)
    assert len(ids) == 5


def test_post_answers_202_and_response_arrives_as_message_event_with_id(server, http):
    with LegacyStream(http, server.base_url) as stream:
        message = request("initialize", {"protocolVersion": "2024-11-05", "capabilities": {},
                                         "clientInfo": {"name": "raw", "version": "0"}})
        posted = stream.post(message)
        assert posted.status_code == 202
        assert posted.content == b""
        event = stream.next_event()
        assert event.event == "message"
        assert event.id, "every message event carries an id: line"
        answer = event.json()
        assert answer["id"] == message["id"]
        assert answer["result"]["protocolVersion"] == "2024-11-05"
        assert answer["result"]["serverInfo"]["name"]


def test_full_session_initialize_list_and_call_every_tool(server, http):
    with LegacyStream(http, server.base_url) as stream:
        result = stream.open()
        assert "tools" in result["capabilities"]
        names = {tool["name"] for tool in stream.call(request("tools/list"))["result"]["tools"]}
        assert {"add", "echo", "get_time"} <= names
        assert stream.call(call_tool("add", {"a": 2, "b": 3}))["result"]["content"] == [{"type": "text", "text": "5"}]
        assert stream.call(call_tool("echo", {"text": "héllo"}))["result"]["content"][0]["text"] == "héllo"
        now = stream.call(call_tool("get_time", {}))["result"]
        assert now["isError"] is False and now["content"][0]["text"].startswith("20")
        # 2024-11-05 has no structuredContent.
        assert "structuredContent" not in now


def test_event_ids_increase_along_the_stream(server, http):
    with LegacyStream(http, server.base_url) as stream:
        stream.open()
        ids = []
        for _n in range(5):
            assert stream.post(request("ping")).status_code == 202
            ids.append(int(stream.next_event().id))
        assert ids == sorted(ids) and len(set(ids)) == 5


def test_session_id_query_may_be_spelled_sessionId(server, http):
    with LegacyStream(http, server.base_url) as stream:
        message = request("ping")
        posted = http.post(server.url, params={"sessionId": stream.session_id}, json=message)
        assert posted.status_code == 202
        assert stream.wait_for(message["id"])["result"] == {}


def test_request_before_initialize_gets_a_clear_error(server, http):
    with LegacyStream(http, server.base_url) as stream:
        answer = stream.call(request("tools/list"))
        assert answer["error"]["code"] == -32600
        assert "initialize" in answer["error"]["message"]
        assert stream.call(request("ping"))["result"] == {}


def test_sse_and_messages_aliases(server, http):
    with LegacyStream(http, server.base_url, path="/sse") as stream:
        assert stream.endpoint_data == f"/messages?session_id={stream.session_id}"
        stream.open()
        answer = stream.call(call_tool("echo", {"text": "via aliases"}))
        assert answer["result"]["content"][0]["text"] == "via aliases"
        # The session is one session whichever path a POST takes.
        ping = request("ping")
        assert http.post(server.url, params={"session_id": stream.session_id}, json=ping).status_code == 202
        assert stream.wait_for(ping["id"])["result"] == {}


def test_keepalive_comments_arrive_every_keepalive_interval(tuned_server, http):
    # The tuned server pings every 0.5 s; read the raw lines for a bounded while.
    with http.stream("GET", tuned_server.url, headers={"Accept": "text/event-stream"}, timeout=5.0) as response:
        pings = 0
        started = time.monotonic()
        for line in response.iter_lines():
            if line == ": ping":
                pings += 1
            if pings == 4:
                break
            assert time.monotonic() - started < 10, "keepalives did not arrive"
        # Four pings at 0.5 s take about 2 s; generous bound against a loaded machine.
        assert time.monotonic() - started < 10


def test_notification_gets_202_and_nothing_on_the_stream(server, http):
    with LegacyStream(http, server.base_url) as stream:
        stream.open()
        assert stream.post(notification("notifications/roots/list_changed")).status_code == 202
        marker = request("ping")
        assert stream.post(marker).status_code == 202
        # The next message on the stream is the marker's answer: the notification produced nothing.
        assert stream.next_event().json()["id"] == marker["id"]


def test_idle_session_expires_after_ttl(short_ttl_server, http):
    with LegacyStream(http, short_ttl_server.base_url) as stream:
        stream.open()
        endpoint = stream.endpoint
    # The dropped stream is noticed at a keepalive; then the session idles past its TTL. Every lookup
    # refreshes a live session, so poll less often than the TTL, within a bounded time.
    deadline = time.monotonic() + 20
    status = None
    while time.monotonic() < deadline:
        time.sleep(SHORT_SESSION_TTL_S * 2.5)
        status = http.post(endpoint, json=request("ping")).status_code
        if status == 404:
            break
        assert status == 202
    assert status == 404
    answer = http.post(endpoint, json=request("ping"))
    assert answer.json()["error"]["code"] == -32600
    # Resuming the expired session is refused too.
    resumed = http.get(short_ttl_server.url, params={"session_id": endpoint.rsplit("=", 1)[1]})
    assert resumed.status_code == 404


def test_active_session_outlives_its_ttl(short_ttl_server, http):
    # A session whose stream stays open is not idle, however long it lasts.
    with LegacyStream(http, short_ttl_server.base_url) as stream:
        stream.open()
        time.sleep(SHORT_SESSION_TTL_S * 3)
        assert stream.call(request("ping"))["result"] == {}


def test_stream_refused_for_foreign_origin_opens_no_session(http):
    # A server of its own: on the shared one, other tests' sessions come and go, so the count is not exact.
    with ServerProcess() as quiet:
        assert httpx.get(quiet.base_url + "/readyz").json()["sessions"] == 0
        refused = http.get(quiet.url, headers={"Origin": "http://evil.example", "Accept": "text/event-stream"})
        assert refused.status_code == 403
        assert httpx.get(quiet.base_url + "/readyz").json()["sessions"] == 0

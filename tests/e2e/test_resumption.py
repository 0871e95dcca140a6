"""Last-Event-ID after a dropped stream, on both transports: every missed message exactly once, in order."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.raw_clients import LegacyStream, StreamableSession, call_tool, client, request
from tests.e2e.sse_client import Event, iter_events

pytestmark = pytest.mark.e2e


@pytest.fixture
def http():
    """A bounded httpx client for one test."""
    with client() as http:
        yield http


def echo_calls(label: str, count: int) -> list[dict[str, Any]]:
    """count echo requests whose texts say label and position."""
    return [call_tool("echo", {"text": f"{label}-{n}"}) for n in range(count)]


def read_until_response(stream: LegacyStream, request_id: Any) -> list[Event]:
    """Every event up to and including the response to request_id."""
    events = []
    while True:
        events.append(stream.next_event())
        if events[-1].json().get("id") == request_id:
            return events


def test_legacy_stream_resumes_after_a_drop_with_nothing_lost_or_repeated(tuned_server, http):
    stream = LegacyStream(http, tuned_server.base_url)
    stream.open()
    before = echo_calls("before", 5)
    for message in before:
        assert stream.post(message).status_code == 202
    # Read three of the five answers, then drop the connection.
    seen = [stream.next_event() for _ in range(3)]
    stream.close()
    last_event_id = seen[-1].id
    after = echo_calls("after", 5)
    for message in after:
        assert http.post(stream.endpoint, json=message).status_code == 202

    resumed = LegacyStream(http, tuned_server.base_url, params={"session_id": stream.session_id},
                           headers={"Last-Event-ID": last_event_id})
    with resumed:
        assert resumed.session_id == stream.session_id
        # A marker posted after reconnecting bounds the replay: everything before it was missed.
        marker = request("ping")
        assert resumed.post(marker).status_code == 202
        replayed = read_until_response(resumed, marker["id"])[:-1]

    seen_ids = {event.json()["id"] for event in seen}
    missed = [m["id"] for m in before if m["id"] not in seen_ids] + [m["id"] for m in after]
    replayed_ids = [event.json()["id"] for event in replayed]
    assert sorted(replayed_ids) == sorted(missed)
    assert len(set(replayed_ids)) == len(replayed_ids)
    event_ids = [int(event.id) for event in replayed]
    assert event_ids == sorted(event_ids) and event_ids[0] > int(last_event_id)
    texts = {event.json()["id"]: event.json()["result"]["content"][0]["text"] for event in replayed}
    assert texts == {m["id"]: m["params"]["arguments"]["text"] for m in before + after if m["id"] in texts}


def test_legacy_resume_after_everything_was_read_replays_nothing(tuned_server, http):
    stream = LegacyStream(http, tuned_server.base_url)
    stream.open()
    ping = request("ping")
    assert stream.post(ping).status_code == 202
    last = stream.next_event()
    assert last.json()["id"] == ping["id"]
    stream.close()
    # The client saw everything up to the ping's answer: resuming from it has nothing to replay.
    probe = LegacyStream(http, tuned_server.base_url, params={"session_id": stream.session_id},
                         headers={"Last-Event-ID": last.id})
    with probe:
        marker = request("ping")
        assert probe.post(marker).status_code == 202
        first = probe.next_event()
    assert first.json()["id"] == marker["id"]


def log_tags(events: list[Event]) -> list[str]:
    """The tags of the log notifications among events."""
    tags = []
    for event in events:
        message = event.json()
        assert message["method"] == "notifications/message", message
        tags.append(message["params"]["data"]["tag"])
    return tags


def test_streamable_standalone_stream_resumes_after_a_drop(tuned_server, http):
    session = StreamableSession(http, tuned_server.url)
    with session.open_stream(timeout=10.0) as response:
        assert response.status_code == 200
        events = iter_events(response)
        # A JSON-only answer sends the call's log messages to the standalone stream.
        assert session.call(call_tool("log_messages", {"label": "a", "count": 3}))["result"]["isError"] is False
        seen = [next(events), next(events)]
    assert log_tags(seen) == ["a-1", "a-2"]
    assert all(event.id for event in seen)
    session.call(call_tool("log_messages", {"label": "b", "count": 3}))

    with session.open_stream(last_event_id=seen[-1].id, timeout=10.0) as response:
        assert response.status_code == 200, response.read()
        events = iter_events(response)
        session.call(call_tool("log_messages", {"label": "end", "count": 1}))
        replayed = []
        while not replayed or log_tags(replayed)[-1] != "end-1":
            replayed.append(next(events))
    assert log_tags(replayed) == ["a-3", "b-1", "b-2", "b-3", "end-1"]
    assert session.delete().status_code == 204


def test_streamable_reconnect_right_after_a_drop_is_not_refused(tuned_server, http):
    # The server learns of a dropped stream only when it next writes to it; a client resuming with
    # Last-Event-ID before that must not be told the session already has a stream (409).
    session = StreamableSession(http, tuned_server.url)
    with session.open_stream(timeout=10.0) as response:
        events = iter_events(response)
        session.call(call_tool("log_messages", {"label": "a", "count": 2}))
        seen = [next(events)]
    with session.open_stream(last_event_id=seen[-1].id, timeout=10.0) as response:
        assert response.status_code == 200, response.read()
        replayed = [next(iter_events(response))]
    assert log_tags(replayed) == ["a-2"]
    session.delete()


def test_resuming_stream_replaces_a_live_one_which_ends(tuned_server, http):
    session = StreamableSession(http, tuned_server.url)
    session.call(call_tool("log_messages", {"label": "x", "count": 1}))
    with session.open_stream(timeout=10.0) as old:
        old_events = iter_events(old)
        first = next(old_events)
        with session.open_stream(last_event_id=first.id, timeout=10.0) as new:
            assert new.status_code == 200
            # The old stream ends (no more events, no hang); the new one carries what follows.
            assert list(old_events) == []
            session.call(call_tool("log_messages", {"label": "y", "count": 1}))
            assert log_tags([next(iter_events(new))]) == ["y-1"]
    session.delete()

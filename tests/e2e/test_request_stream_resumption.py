"""A Streamable HTTP call's own event stream survives a drop: Last-Event-ID picks it up again (SEP-1699)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.e2e.raw_clients import READ_TIMEOUT_S, StreamableSession, call_tool
from tests.e2e.sse_client import iter_events

pytestmark = pytest.mark.e2e


def read_raw_events(response: httpx.Response, count: int) -> list[dict]:
    """Read count SSE events (priming events included), each as {"id", "data", "retry"}."""
    events = []
    for event in iter_events(response, keep_empty=True):
        events.append({"id": event.id, "data": event.data, "retry": event.retry})
        if len(events) == count:
            break
    return events


def test_priming_event_comes_first_with_an_id_and_a_retry_on_2025_11_25(tuned_server):
    """The first event of a call's stream has an id, a retry field and no data."""
    with httpx.Client(timeout=READ_TIMEOUT_S) as http:
        session = StreamableSession(http, tuned_server.url, version="2025-11-25")
        body = call_tool("log_messages", {"label": "p", "count": 1})
        with http.stream("POST", tuned_server.url, json=body,
                         headers={"Accept": "application/json, text/event-stream", **session.headers}) as answer:
            assert answer.headers["content-type"].startswith("text/event-stream")
            priming, log_event, result = read_raw_events(answer, 3)
    assert priming["data"] == "" and priming["id"].startswith("0/") and int(priming["retry"]) > 0
    assert json.loads(log_event["data"])["method"] == "notifications/message"
    assert json.loads(result["data"])["id"] == body["id"]


def test_no_priming_event_before_2025_11_25(tuned_server):
    """Older clients may not expect an event without data, so they never get one."""
    with httpx.Client(timeout=READ_TIMEOUT_S) as http:
        session = StreamableSession(http, tuned_server.url, version="2025-06-18")
        body = call_tool("log_messages", {"label": "q", "count": 1})
        with http.stream("POST", tuned_server.url, json=body,
                         headers={"Accept": "application/json, text/event-stream", **session.headers}) as answer:
            first = read_raw_events(answer, 1)[0]
    assert json.loads(first["data"])["method"] == "notifications/message"


def test_a_dropped_call_stream_resumes_with_last_event_id_nothing_lost_or_repeated(tuned_server):
    """Drop the call's stream after its first message; the GET with that id gets the rest and the result, once."""
    with httpx.Client(timeout=READ_TIMEOUT_S) as http:
        session = StreamableSession(http, tuned_server.url, version="2025-11-25")
        body = call_tool("sleep_ms", {"ms": 700, "announce": True})
        with http.stream("POST", tuned_server.url, json=body,
                         headers={"Accept": "application/json, text/event-stream", **session.headers}) as answer:
            priming, announced = read_raw_events(answer, 2)
        # The call is still sleeping; resume after the last event we saw.
        with session.open_stream(last_event_id=announced["id"]) as resumed:
            assert resumed.status_code == 200
            rest = [e for e in read_raw_events(resumed, 5) if e.get("data")]
    assert json.loads(announced["data"])["params"]["data"] == "sleeping 700 ms"
    assert len(rest) == 1, rest
    response = json.loads(rest[0]["data"])
    assert response["id"] == body["id"] and response["result"]["content"][0]["text"] == "slept 700 ms"
    assert rest[0]["id"].endswith(priming["id"].split("/", 1)[1])


def test_resuming_a_call_stream_leaves_the_session_stream_alone(tuned_server):
    """A resumed call stream is not the standalone stream: opening it gives no 409 and takes nothing from it."""
    with httpx.Client(timeout=READ_TIMEOUT_S) as http:
        session = StreamableSession(http, tuned_server.url, version="2025-11-25")
        with session.open_stream() as standalone:
            assert standalone.status_code == 200
            body = call_tool("log_messages", {"label": "r", "count": 2})
            with http.stream("POST", tuned_server.url, json=body,
                             headers={"Accept": "application/json, text/event-stream",
                                      **session.headers}) as answer:
                priming = read_raw_events(answer, 1)[0]
            with session.open_stream(last_event_id=priming["id"]) as resumed:
                assert resumed.status_code == 200
                replayed = [json.loads(e["data"]) for e in read_raw_events(resumed, 3) if e.get("data")]
    assert [m.get("params", {}).get("data", {}).get("tag") for m in replayed[:2]] == ["r-1", "r-2"]
    assert replayed[2]["id"] == body["id"]

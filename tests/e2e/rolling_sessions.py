"""Sessions kept open through the rolling restart: a legacy HTTP+SSE one and a Streamable HTTP one.

Both resume their streams with Last-Event-ID through the balancer, and count: every answer and every
notification sent arrives exactly once, under the same session id.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.e2e.raw_clients import BOTH, call_tool, initialize, notification
from tests.e2e.rolling_balancer import http_client
from tests.e2e.rolling_streams import FollowedStream, read_events
from tests.e2e.rolling_work import JOIN_S, LONG_MS, SHORT_MS, InFlight, OpenWork, assert_each_once
from tests.e2e.server_process import ServerProcess

__all__ = ["LegacySseWork", "StreamableWork"]

SESSION_VERSION = "2025-11-25"


class LegacySseWork(OpenWork):
    """A legacy HTTP+SSE session (GET /sse): calls POSTed, answered on the stream, resumed with Last-Event-ID."""

    def start(self) -> None:
        self.session_id = ""
        self.stream = FollowedStream(self.open_stream, "legacy-sse").start()
        self.stream.wait_for(lambda events: events and events[0].event == "endpoint", "the endpoint event")
        endpoint = self.stream.events[0].data
        self.session_id = endpoint.rsplit("=", 1)[1]
        self.endpoint = endpoint
        self.sent: list[str] = []
        self.post(initialize(SESSION_VERSION, request_id="legacy-init"))
        self.wait_answered(["legacy-init"])
        self.post(notification("notifications/initialized"))

    def open_stream(self, http: httpx.Client, last_event_id: str | None) -> httpx.Response:
        """GET /sse; with the session's id and Last-Event-ID once there is one (the same session, resumed)."""
        path = f"/sse?session_id={self.session_id}" if self.session_id else "/sse"
        headers = {"Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        return self.balancer.send(http, "GET", path, headers=headers, stream=True)

    def post(self, message: dict[str, Any], pin: ServerProcess | None = None) -> None:
        """POST to the session's endpoint; the session must still be known (202)."""
        answer = self.balancer.send(self.http, "POST", self.endpoint, json=message, pin=pin)
        assert answer.status_code == 202, (answer.status_code, answer.text)

    def answers(self) -> list[dict[str, Any]]:
        """Every response the stream carried."""
        return [m for m in self.stream.messages() if isinstance(m, dict) and "id" in m and "method" not in m]

    def wait_answered(self, ids: list[str]) -> None:
        """Wait until the stream carried a response for each id."""
        wanted = set(ids)
        self.stream.wait_for(lambda _: wanted <= {a["id"] for a in self.answers()}, f"answers to {sorted(wanted)}")

    def pump(self, tick: int) -> None:
        request_id = f"legacy-{tick}"
        self.post(call_tool("echo", {"text": request_id}, request_id=request_id))
        self.sent.append(request_id)

    def before_stop(self, host: ServerProcess) -> None:
        for ms in (SHORT_MS, LONG_MS):
            request_id = f"legacy-sleep-{ms}-{len(self.in_flight)}"
            self.post(call_tool("sleep_ms", {"ms": ms}, request_id=request_id), pin=host)
            self.in_flight.append(InFlight(request_id, ms, self.await_answer(request_id)))

    def await_answer(self, request_id: str):
        """What a legacy in-flight call's thread does: wait for its answer on the (resumed) stream."""
        def run(call: InFlight) -> None:
            call.started.set()
            self.wait_answered([request_id])
            call.responses.extend(a for a in self.answers() if a["id"] == request_id)
        return run

    def check(self) -> None:
        super().check()
        self.wait_answered(self.sent)
        answers = self.answers()
        assert_each_once([a["id"] for a in answers if a["id"] != "legacy-init" and "sleep" not in a["id"]],
                         self.sent, "legacy answers")
        assert all(a["result"]["structuredContent"] == {"result": a["id"]}
                   for a in answers if a["id"] in set(self.sent))
        ids = [event.id for event in self.stream.events if event.id]
        assert len(ids) == len(set(ids)), "an event id came twice"
        endpoints = {event.data for event in self.stream.events if event.event == "endpoint"}
        assert endpoints == {self.endpoint}, f"the session changed: {endpoints}"
        assert self.stream.statuses == [200] * len(self.stream.statuses), self.stream.problems

    def summary(self) -> str:
        return (f"{super().summary()}; {len(self.sent)} answers, each once, over {self.stream.connections} "
                "stream connections")

    def close(self) -> None:
        if hasattr(self, "stream"):
            self.stream.stop()
        super().close()


class StreamableWork(OpenWork):
    """A Streamable HTTP session: its standalone GET stream resumed with Last-Event-ID, JSON and SSE calls."""

    def start(self) -> None:
        answer = self.balancer.send(self.http, "POST", "/mcp", json=initialize(SESSION_VERSION),
                                    headers={"Accept": BOTH})
        assert answer.status_code == 200, answer.text
        self.session_id = answer.headers["Mcp-Session-Id"]
        self.headers = {"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": SESSION_VERSION}
        assert self.post(notification("notifications/initialized")).status_code == 202
        self.tags: list[str] = []
        self.stream = FollowedStream(self.open_stream, "streamable-standalone").start()
        self.pump(0)

    def open_stream(self, http: httpx.Client, last_event_id: str | None) -> httpx.Response:
        """The session's standalone GET stream, resumed after last_event_id."""
        headers = {"Accept": "text/event-stream", **self.headers}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        return self.balancer.send(http, "GET", "/mcp", headers=headers, stream=True)

    def post(self, message: Any, accept: str = BOTH, pin: ServerProcess | None = None, http=None,
             stream: bool = False) -> httpx.Response:
        """POST on the session."""
        return self.balancer.send(http or self.http, "POST", "/mcp", json=message, pin=pin, stream=stream,
                                  headers={"Accept": accept, **self.headers})

    def logged(self) -> list[Any]:
        """The data of every log message the standalone stream carried."""
        return [m["params"]["data"] for m in self.stream.messages() if m.get("method") == "notifications/message"]

    def logged_tags(self) -> list[str]:
        """The tags of the pumped log messages the standalone stream carried (announcements left out)."""
        return [data["tag"] for data in self.logged() if isinstance(data, dict)]

    def pump(self, tick: int) -> None:
        tag = f"s{tick}"
        answer = self.post(call_tool("log_messages", {"label": tag, "count": 1}), accept="application/json")
        assert answer.status_code == 200, (answer.status_code, answer.text)
        assert answer.json()["result"]["structuredContent"] == {"result": 1}
        self.tags.append(f"{tag}-1")

    def before_stop(self, host: ServerProcess) -> None:
        for ms in (SHORT_MS, LONG_MS):
            n = len(self.in_flight)
            call = InFlight(f"streamable-json-{ms}-{n}", ms, self.json_call(host, ms, n))
            # Its announcement comes on the standalone stream; one more than the calls of ms already there.
            wanted = self.announced(ms) + 1
            text = f"sleeping {ms} ms"
            self.stream.wait_for(lambda _, text=text, wanted=wanted: self.logged().count(text) >= wanted,
                                 f"the JSON call {call.name} to start")
            self.in_flight.append(call)
            call = InFlight(f"streamable-sse-{ms}-{n}", ms, self.sse_call(host, ms, n))
            assert call.started.wait(JOIN_S), f"{call.name} did not start"
            self.in_flight.append(call)

    def announced(self, ms: int) -> int:
        """How many JSON calls of ms are already running or done (their announcements on the standalone stream)."""
        return sum(1 for call in self.in_flight if call.name.startswith("streamable-json-") and call.ms == ms)

    def json_call(self, host: ServerProcess, ms: int, n: int):
        """A call answered as JSON on its POST: the answer must come on that POST."""
        def run(call: InFlight) -> None:
            message = call_tool("sleep_ms", {"ms": ms, "announce": True}, request_id=f"json-{ms}-{n}")
            with http_client() as http:
                answer = self.post(message, accept="application/json", pin=host, http=http)
            assert answer.status_code == 200, (answer.status_code, answer.text)
            call.responses.append(answer.json())
        return run

    def sse_call(self, host: ServerProcess, ms: int, n: int):
        """A call answered on its own SSE stream; if the stream ends first, resumed with its Last-Event-ID."""
        def run(call: InFlight) -> None:
            with http_client() as http:
                follow(call, http)

        def follow(call: InFlight, http: httpx.Client) -> None:
            request_id = f"sse-{ms}-{n}"
            response = self.post(call_tool("sleep_ms", {"ms": ms, "announce": True}, request_id=request_id),
                                 pin=host, http=http, stream=True)
            last_id = None
            for _ in range(10):
                try:
                    assert response.status_code == 200, (response.status_code, response.read())
                    for event in read_events(response, keep_empty=True):
                        last_id = event.id or last_id
                        if event.data:
                            message = json.loads(event.data)
                            if message.get("method") == "notifications/message":
                                call.started.set()
                            elif message.get("id") == request_id:
                                call.responses.append(message)
                finally:
                    response.close()
                if call.responses:
                    return
                assert last_id is not None, f"{call.name}: the stream ended before its priming event"
                response = self.open_stream(http, last_id)
            raise AssertionError(f"{call.name}: no answer after 10 resumptions")
        return run

    def check(self) -> None:
        super().check()
        self.stream.wait_for(lambda _: set(self.tags) <= set(self.logged_tags()), "every log message")
        assert_each_once(self.logged_tags(), self.tags, "standalone stream messages")
        ids = [event.id for event in self.stream.events if event.id]
        assert len(ids) == len(set(ids)), "an event id came twice"
        assert self.stream.statuses == [200] * len(self.stream.statuses), self.stream.problems

    def summary(self) -> str:
        return (f"{super().summary()}; {len(self.tags)} standalone-stream notifications, each once, over "
                f"{self.stream.connections} stream connections")

    def close(self) -> None:
        if hasattr(self, "stream"):
            self.stream.stop()
        super().close()

"""Metrics: what each hook counts, and what /metrics serves (single-process mode; e2e covers gunicorn)."""

from __future__ import annotations

from types import SimpleNamespace

import gevent
import pytest
from prometheus_client import CollectorRegistry

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.metrics import Instruments, instruments
from flask_mcp_gevent.session import Session
from flask_mcp_gevent.stateless.listen import ListenRegistry, subscriptions_listen
from flask_mcp_gevent.store.memory import MemoryStore
from flask_mcp_gevent.transports.event_stream import RequestStream, stream_events

KNOWN = {"tools/call": None, "ping": None}


@pytest.fixture
def fresh() -> Instruments:
    """Instruments on their own registry, so each test starts from zero."""
    return Instruments(CollectorRegistry(), KNOWN)


def value(metrics: Instruments, name: str, **labels: str) -> float:
    """One sample's value (0.0 when it was never set)."""
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_requests_are_counted_by_method_and_outcome(fresh):
    fresh.count_request("ping", {"jsonrpc": "2.0", "id": 1, "result": {}}, 0.001)
    fresh.count_request("ping", {"jsonrpc": "2.0", "id": 2, "result": {}}, 0.001)
    fresh.count_request("tools/call", {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "x"}}, 0.01)
    fresh.count_request("tools/call", None, 0.5)
    assert value(fresh, "mcp_requests_total", method="ping", outcome="ok", code="") == 2
    assert value(fresh, "mcp_requests_total", method="tools/call", outcome="error", code="-32602") == 1
    assert value(fresh, "mcp_requests_total", method="tools/call", outcome="cancelled", code="") == 1


def test_unknown_method_names_share_one_label_so_clients_cannot_grow_the_series(fresh):
    for index in range(50):
        fresh.count_request(f"made/up/{index}", {"error": {"code": -32601}}, 0.0)
    assert value(fresh, "mcp_requests_total", method="other", outcome="error", code="-32601") == 50
    methods = {s.labels["method"] for m in fresh.registry.collect() for s in m.samples if "method" in s.labels}
    assert methods == {"other"}


def test_tool_calls_feed_the_latency_histogram_and_other_methods_do_not(fresh):
    fresh.count_request("tools/call", {"result": {}}, 0.003)
    fresh.count_request("ping", {"result": {}}, 0.003)
    assert value(fresh, "mcp_tool_call_duration_seconds_count") == 1
    assert value(fresh, "mcp_tool_call_duration_seconds_bucket", le="0.005") == 1
    assert value(fresh, "mcp_tool_call_duration_seconds_bucket", le="0.0025") == 0


def test_open_streams_gauge_follows_the_stream_generator_from_first_frame_to_close(settings):
    metrics = instruments()
    store = MemoryStore(settings)
    session = Session()
    store.sessions.create_session(session)
    before = value(metrics, "mcp_open_streams", kind="legacy")
    frames = stream_events(store.events.subscribe(session.id), 5.0, b": hello\n\n")
    assert value(metrics, "mcp_open_streams", kind="legacy") == before  # not started: nothing sent yet
    assert next(frames) == b": hello\n\n"
    assert value(metrics, "mcp_open_streams", kind="legacy") == before + 1
    frames.close()  # what a disconnect does at the next write
    assert value(metrics, "mcp_open_streams", kind="legacy") == before


def test_slow_consumer_cut_off_counts_a_queue_drop():
    metrics = instruments()
    store = MemoryStore(Settings.from_mapping({"MCP_QUEUE_MAX": "2"}))
    session = Session()
    store.sessions.create_session(session)
    store.events.subscribe(session.id)
    before = value(metrics, "mcp_stream_queue_drops_total")
    for index in range(3):
        store.events.publish(session.id, {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": index}})
    assert value(metrics, "mcp_stream_queue_drops_total") == before + 1


def test_opening_a_session_counts_it_by_transport(app):
    metrics = instruments()
    server = app.extensions["mcp"].server
    before = value(metrics, "mcp_sessions_opened_total", transport="streamable")
    server.open_session("streamable")
    assert value(metrics, "mcp_sessions_opened_total", transport="streamable") == before + 1


def test_metrics_route_serves_prometheus_text_with_every_metric(client):
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain; version=0.0.4")
    text = response.get_data(as_text=True)
    for name in ("mcp_requests_total", "mcp_tool_call_duration_seconds", "mcp_open_streams", "mcp_sessions",
                 "mcp_sessions_opened_total", "mcp_stream_queue_drops_total", "mcp_replay_gaps_total"):
        assert f"# TYPE {name.removesuffix('_total')}" in text, name


def test_metrics_route_speaks_openmetrics_when_asked(client):
    response = client.get("/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert response.content_type.startswith("application/openmetrics-text")
    assert response.get_data(as_text=True).endswith("# EOF\n")


def test_metrics_route_reports_the_sessions_the_store_holds(app, client):
    server = app.extensions["mcp"].server
    for _ in range(3):
        server.open_session("streamable")
    text = client.get("/metrics").get_data(as_text=True)
    assert f"mcp_sessions {float(server.store.sessions.session_count())}" in text


def test_a_request_through_the_server_is_counted_once(app):
    server = app.extensions["mcp"].server
    metrics = instruments()
    session = server.open_session("streamable")
    before = value(metrics, "mcp_requests_total", method="ping", outcome="ok", code="")
    ping = parse_body(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    running, errors = server.accept(session, ping, lambda m: None)
    gevent.joinall(running)
    assert errors == [] and running[0].value["result"] == {}
    assert value(metrics, "mcp_requests_total", method="ping", outcome="ok", code="") == before + 1


def test_a_listen_stream_cut_off_with_its_transport_counts_one_queue_drop():
    metrics = instruments()
    registry = ListenRegistry(2, 10_000, 5)
    send = RequestStream("listen", max_count=100, close_connection=lambda: None)
    ctx = SimpleNamespace(services=SimpleNamespace(listeners=registry), request_id=1, principal=None,
                          permits=lambda kind, name: True, settings=SimpleNamespace(keepalive_s=0.05), send=send,
                          session=SimpleNamespace(client_capabilities={}),
                          params={"notifications": {"toolsListChanged": True}, "_meta": {}})
    running = gevent.spawn(subscriptions_listen, ctx, {"toolsListChanged": True})
    gevent.sleep(0.01)
    before = value(metrics, "mcp_stream_queue_drops_total")
    for _ in range(3):  # the listen queue holds 2: the third cuts it off, and its transport with it
        registry.deliver({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    running.join(timeout=5)
    assert send.reason == "slow consumer"
    assert value(metrics, "mcp_stream_queue_drops_total") == before + 1

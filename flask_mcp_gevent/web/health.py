"""Operations endpoints: /healthz (the process answers), /readyz (its dependencies do), /metrics (Prometheus).

They need no credentials, but they check Origin (403) and Host (421) as /mcp does:
otherwise a DNS-rebinding page in a local browser could read the metrics. Without prometheus-client (the
metrics extra) /metrics answers 404 with a JSON body naming the extra.
"""

from __future__ import annotations

from http import HTTPStatus

from flask import Blueprint, Response, request

from flask_mcp_gevent import metrics
from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.config import install_hint
from flask_mcp_gevent.transports.http_io import json_response
from flask_mcp_gevent.web.mcp_app import current_server
from flask_mcp_gevent.web.pipeline import check_host, check_origin

__all__ = ["ops_blueprint"]


def refuse_foreign_pages() -> None:
    """Refuse a foreign Origin (403) and a Host that does not name this server (421), before any endpoint runs."""
    settings = current_server().settings
    check_origin(request.headers.get("Origin"), settings)
    check_host(request.environ, settings)


def healthz() -> Response:
    """Alive: the worker answers HTTP."""
    return json_response({"status": "ok"})


def readyz() -> Response:
    """Ready: the store's backing service answers."""
    server = current_server()
    try:
        if server.ready():
            return json_response({"status": "ready", "sessions": server.session_count()})
    except StoreUnavailable:
        pass  # Redis went away between the two calls
    return json_response({"status": "not ready", "reason": "session store unreachable"}, HTTPStatus.SERVICE_UNAVAILABLE)


def prometheus_metrics() -> Response:
    """Every worker's counters, gauges and histograms in Prometheus text format (404 without the metrics extra)."""
    if not metrics.available():
        reason = f"the metrics extra (prometheus-client) is not installed: {install_hint('metrics')}"
        return json_response({"status": "no metrics", "reason": reason}, HTTPStatus.NOT_FOUND)
    server = current_server()
    try:
        session_count = server.session_count()
    except StoreUnavailable:
        session_count = None
    body, content_type = metrics.render(request.headers.get("Accept"), session_count)
    return Response(body, content_type=content_type)


def ops_blueprint(prefix: str = "", name: str = "ops") -> Blueprint:
    """The operations endpoints under prefix: prefix/healthz, prefix/readyz, prefix/metrics."""
    blueprint = Blueprint(name, __name__)
    blueprint.before_request(refuse_foreign_pages)
    blueprint.add_url_rule(f"{prefix}/healthz", view_func=healthz, methods=["GET"])
    blueprint.add_url_rule(f"{prefix}/readyz", view_func=readyz, methods=["GET"])
    blueprint.add_url_rule(f"{prefix}/metrics", view_func=prometheus_metrics, methods=["GET"])
    return blueprint

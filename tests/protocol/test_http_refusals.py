"""What the HTTP wires answer in-process before dispatch: the request's id on a body refused for its shape, Accept
q values, and the version header of a GET or DELETE that names a session."""

from __future__ import annotations

import pytest

from app import create_app
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.web.mcp_app import server_of

BOTH = "application/json, text/event-stream"
JSON_BODY = {"Content-Type": "application/json"}
STATELESS_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}
LIMITS = {"MCP_MAX_STRING_BYTES": "100", "MCP_MAX_ARGUMENT_BYTES": "200", "MCP_MAX_JSON_DEPTH": "8"}


@pytest.fixture
def http():
    """A test client of the template app with small body limits."""
    return create_app(Settings.from_environ(LIMITS)).test_client()


def open_session(http, version: str = "2025-11-25") -> dict[str, str]:
    """Initialize a Streamable HTTP session; the headers every later request of it sends."""
    response = http.post("/mcp", headers={**JSON_BODY, "Accept": "application/json"}, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    assert response.status_code == 200, response.get_data()
    headers = {"Mcp-Session-Id": response.headers["Mcp-Session-Id"], "MCP-Protocol-Version": version}
    http.post("/mcp", headers={**JSON_BODY, **headers}, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


OVER_LIMITS = {
    "string": (413, {"name": "echo", "arguments": {"text": "x" * 150}}),
    "arguments": (413, {"name": "echo", "arguments": {"text": "x" * 90, "a": "y" * 90, "b": "z" * 90}}),
    "depth": (400, {"name": "echo", "arguments": {"text": [[[[[[[[["deep"]]]]]]]]]}}),
}


@pytest.mark.parametrize("limit", OVER_LIMITS)
def test_a_body_over_a_shape_limit_is_refused_with_the_requests_id_on_a_session(http, limit):
    status, params = OVER_LIMITS[limit]
    response = http.post("/mcp", headers={**JSON_BODY, "Accept": BOTH, **open_session(http)},
                         json={"jsonrpc": "2.0", "id": "over-1", "method": "tools/call", "params": params})
    assert response.status_code == status
    assert response.get_json()["id"] == "over-1"


@pytest.mark.parametrize("limit", OVER_LIMITS)
def test_a_body_over_a_shape_limit_is_refused_with_the_requests_id_on_the_stateless_wire(http, limit):
    status, params = OVER_LIMITS[limit]
    headers = {**JSON_BODY, "Accept": BOTH, "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
               "Mcp-Name": "echo"}
    response = http.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 21, "method": "tools/call",
                                                        "params": {**params, "_meta": STATELESS_META}})
    assert response.status_code == status
    assert response.get_json()["id"] == 21


def test_an_id_that_is_itself_the_string_over_the_limit_is_not_echoed(http):
    response = http.post("/mcp", headers={**JSON_BODY, "Accept": BOTH, **open_session(http)},
                         json={"jsonrpc": "2.0", "id": "i" * 150, "method": "ping"})
    assert response.status_code == 413
    assert response.get_json()["id"] is None


@pytest.mark.parametrize("accept", ["application/json;q=0", "text/html, */*;q=0",
                                    "application/json;q=0, text/event-stream;q=0"])
def test_an_accept_that_refuses_both_types_with_q_zero_is_406(http, accept):
    response = http.post("/mcp", headers={**JSON_BODY, "Accept": accept, **open_session(http)},
                         json={"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert response.status_code == 406
    assert response.get_json()["id"] == 3


def test_a_call_that_reports_progress_is_answered_as_json_when_accept_refuses_event_streams(http):
    call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "count_down", "arguments": {"steps": 1, "delay_ms": 1}, "_meta": {"progressToken": "p"}}}
    response = http.post("/mcp", json=call, headers={**JSON_BODY, "Accept": "application/json, text/event-stream;q=0",
                                                     **open_session(http)})
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.get_json()["id"] == 4


def test_a_request_is_answered_as_an_event_stream_when_accept_refuses_json(http):
    response = http.post("/mcp", json={"jsonrpc": "2.0", "id": 5, "method": "ping"},
                         headers={**JSON_BODY, "Accept": "application/json;q=0, */*", **open_session(http)})
    assert response.status_code == 200
    assert response.mimetype == "text/event-stream"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
@pytest.mark.parametrize("version", ["1999-01-01", "garbage"])
def test_a_get_or_delete_naming_a_session_with_an_unknown_version_gets_the_session_wires_400(http, method, version):
    session = open_session(http)
    response = http.open("/mcp", method=method, headers={**session, "MCP-Protocol-Version": version,
                                                         "Accept": "text/event-stream"})
    assert response.status_code == 400
    assert "MCP-Protocol-Version" in response.get_json()["error"]["message"]
    # The session is still there: a DELETE refused for its header ended nothing.
    still = http.post("/mcp", headers={**JSON_BODY, "Accept": BOTH, **session},
                      json={"jsonrpc": "2.0", "id": 6, "method": "ping"})
    assert still.status_code == 200


@pytest.mark.parametrize("body", [
    [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
      "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}],
    {"jsonrpc": "2.0", "method": "initialize",
     "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
], ids=["in a batch", "as a notification"])
def test_an_initialize_that_is_not_a_lone_request_is_refused_saying_so(http, body):
    response = http.post("/mcp", json=body, headers={**JSON_BODY, "Accept": BOTH})
    assert response.status_code == 400
    assert "Mcp-Session-Id" not in response.headers
    assert "initialize opens a session only as a lone request" in response.get_json()["error"]["message"]


def test_a_head_on_the_sse_path_opens_no_session(http):
    server = server_of(http.application)
    before = server.session_count()
    response = http.head("/sse")
    assert response.status_code == 405
    assert response.headers["Allow"] == "GET, OPTIONS"
    assert server.session_count() == before


@pytest.mark.parametrize(("path", "allow"), [("/mcp", "GET, POST, DELETE, OPTIONS"), ("/sse", "GET, OPTIONS"),
                                             ("/messages", "POST, OPTIONS")])
def test_allow_names_what_a_path_serves_and_never_the_head_it_refuses(http, path, allow):
    assert http.options(path).headers["Allow"] == allow
    assert http.open(path, method="PROPFIND").headers["Allow"] == allow
    head = http.head(path)
    assert head.status_code == 405 and head.headers["Allow"] == allow


@pytest.mark.parametrize(("path", "takes"), [("/mcp", "GET, DELETE, POST"), ("/sse", "GET"), ("/messages", "POST")])
def test_a_method_a_path_does_not_take_is_refused_naming_that_path_and_what_it_takes(http, path, takes):
    response = http.open(path, method="PATCH")
    assert response.status_code == 405
    message = response.get_json()["error"]["message"]
    assert f"on {path};" in message
    assert sorted(message.rsplit("it takes ", 1)[1].split(", ")) == sorted(takes.split(", "))

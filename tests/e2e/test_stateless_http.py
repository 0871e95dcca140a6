"""The 2026-07-28 stateless wire against a real gunicorn: discover, list, call, progress over SSE, cancellation by
closing the stream, each validation error with its code, HTTP status and id, and the 405s."""

from __future__ import annotations

import time

import pytest

from tests.e2e.raw_clients import client, initialize
from tests.e2e.server_process import ServerProcess
from tests.e2e.sse_client import iter_events
from tests.e2e.stateless_client import STATELESS_VERSION, post, stateless_headers, stateless_meta, stateless_request

pytestmark = pytest.mark.e2e
WAIT_S = 15.0
BOTH_TYPES = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def server():
    """A server with the slow progress tool and the 2026 conformance fixtures, noticing closed streams quickly."""
    env = {"MCP_PLUGINS": "tests.e2e.plugins.stateless_tools,tests.conformance.fixtures_2026",
           "MCP_KEEPALIVE_S": "0.3"}
    with ServerProcess(env=env) as process:
        yield process


@pytest.fixture
def http():
    """An httpx client with bounded reads."""
    with client() as instance:
        yield instance


def test_discover_answers_with_versions_capabilities_and_server_info(server, http):
    response = post(http, server.url, stateless_request("server/discover", request_id="d-1"))
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers
    body = response.json()
    assert body["id"] == "d-1"
    result = body["result"]
    assert result["resultType"] == "complete" and STATELESS_VERSION in result["supportedVersions"]
    assert {"tools", "prompts", "resources"} <= set(result["capabilities"])
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]
    assert result["ttlMs"] >= 0 and result["cacheScope"] in ("public", "private")


def test_discover_logs_status_ok(server, http):
    post(http, server.url, stateless_request("server/discover", request_id="logged-discover"))
    deadline = time.monotonic() + WAIT_S
    while "id=logged-discover" not in server.read_log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "rpc method=server/discover id=logged-discover session=- status=ok" in server.read_log()


def test_tools_list_is_sorted_and_cacheable(server, http):
    result = post(http, server.url, stateless_request("tools/list")).json()["result"]
    names = [tool["name"] for tool in result["tools"]]
    assert names == sorted(names) and "progress_then_sleep" in names
    assert result["resultType"] == "complete" and "ttlMs" in result and "cacheScope" in result


def test_tool_call_is_answered_as_json(server, http):
    response = post(http, server.url, stateless_request("tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    result = response.json()["result"]
    assert result["resultType"] == "complete" and result["content"][0]["text"] == "hi"


def test_progress_comes_first_on_the_requests_own_stream(server, http):
    message = stateless_request("tools/call", {"name": "progress_then_sleep", "arguments": {"ms": 50}},
                             meta=stateless_meta(progressToken="p-1"))
    with http.stream("POST", server.url, json=message, headers=stateless_headers(message)) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [event.json() for event in iter_events(response)]
    assert [e["params"]["progress"] for e in events[:-1]] == [1, 2]
    assert events[-1]["id"] == message["id"] and events[-1]["result"]["resultType"] == "complete"


def test_closing_the_stream_cancels_the_call(server, http):
    message = stateless_request("tools/call", {"name": "progress_then_sleep", "arguments": {"ms": 20000}},
                             meta=stateless_meta(progressToken="p-2"))
    with http.stream("POST", server.url, json=message, headers=stateless_headers(message)) as response:
        first = next(iter_events(response)).json()
        assert first["method"] == "notifications/progress"
    deadline = time.monotonic() + WAIT_S
    while "progress_then_sleep saw GreenletExit" not in server.read_log() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "progress_then_sleep saw GreenletExit" in server.read_log()
    assert f"rpc method=tools/call id={message['id']} session=- status=cancelled" in server.read_log()


def test_logs_go_out_only_with_a_log_level_in_meta(server, http):
    quiet = post(http, server.url, stateless_request("tools/call", {"name": "test_logging_tool", "arguments": {}}))
    assert quiet.headers["content-type"].startswith("application/json")
    message = stateless_request("tools/call", {"name": "test_logging_tool", "arguments": {}},
                             meta=stateless_meta(**{"io.modelcontextprotocol/logLevel": "info"}))
    with http.stream("POST", server.url, json=message, headers=stateless_headers(message)) as response:
        events = [event.json() for event in iter_events(response)]
    assert [e["params"]["level"] for e in events[:-1]] == ["info", "warning"]


def missing_meta(message):
    """The request without params._meta."""
    del message["params"]["_meta"]
    return message


# (what is sent, extra or overridden headers, expected code, expected HTTP status)
VALIDATION_CASES = {
    "missing _meta": (lambda: missing_meta(stateless_request("tools/list", request_id=101)), {}, -32602, 400),
    "missing clientCapabilities": (
        lambda: stateless_request("tools/list", request_id=102,
                               meta={"io.modelcontextprotocol/protocolVersion": STATELESS_VERSION}), {}, -32602, 400),
    "version header unlike body": (
        lambda: stateless_request("tools/list", request_id=103,
                               meta={**stateless_meta(), "io.modelcontextprotocol/protocolVersion": "v999.0.0"}),
        {}, -32020, 400),
    "Mcp-Method unlike body": (lambda: stateless_request("tools/list", request_id=104),
                               {"Mcp-Method": "prompts/list"}, -32020, 400),
    "Mcp-Name unlike body": (
        lambda: stateless_request("tools/call", {"name": "echo", "arguments": {"text": "x"}}, request_id=105),
        {"Mcp-Name": "add"}, -32020, 400),
    "Mcp-Param missing": (
        lambda: stateless_request("tools/call", {"name": "test_custom_headers", "arguments": {"region": "eu"}},
                               request_id=106), {}, -32020, 400),
    "Mcp-Param unlike body": (
        lambda: stateless_request("tools/call", {"name": "test_custom_headers", "arguments": {"region": "eu"}},
                               request_id=107), {"Mcp-Param-Region": "us"}, -32020, 400),
    "unsupported version": (
        lambda: stateless_request("tools/list", request_id=108,
                               meta={**stateless_meta(), "io.modelcontextprotocol/protocolVersion": "2099-01-01"}),
        {"MCP-Protocol-Version": "2099-01-01"}, -32022, 400),
    "initialize": (lambda: stateless_request("initialize", {"protocolVersion": STATELESS_VERSION}, request_id=109),
                   {}, -32601, 404),
    "ping": (lambda: stateless_request("ping", request_id=110), {}, -32601, 404),
    "logging/setLevel": (lambda: stateless_request("logging/setLevel", {"level": "info"}, request_id=111),
                         {}, -32601, 404),
    "unknown method": (lambda: stateless_request("unknown/method", request_id="u-112"), {}, -32601, 404),
    "resource not found": (
        lambda: stateless_request("resources/read", {"uri": "test://nowhere"}, request_id=113), {}, -32602, 400),
}


@pytest.mark.parametrize("case", sorted(VALIDATION_CASES))
def test_each_refusal_has_its_code_status_and_the_requests_id(server, http, case):
    build, headers, code, status = VALIDATION_CASES[case]
    message = build()
    response = post(http, server.url, message, **headers)
    assert response.status_code == status, response.text
    body = response.json()
    assert body["id"] == message["id"] and body["error"]["code"] == code


def test_unsupported_version_names_supported_and_requested(server, http):
    message = stateless_request("tools/list",
                                meta={**stateless_meta(), "io.modelcontextprotocol/protocolVersion": "v9"})
    data = post(http, server.url, message, **{"MCP-Protocol-Version": "v9"}).json()["error"]["data"]
    assert data["requested"] == "v9" and STATELESS_VERSION in data["supported"]


def test_matching_param_headers_are_accepted_in_base64_too(server, http):
    message = stateless_request("tools/call", {"name": "test_custom_headers", "arguments": {"region": "eu"}})
    response = post(http, server.url, message, **{"Mcp-Param-Region": "=?base64?ZXU=?="})
    assert response.status_code == 200 and "region=eu" in response.json()["result"]["content"][0]["text"]


def test_notifications_get_202_and_batches_are_refused(server, http):
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1, "_meta": stateless_meta()}}
    assert http.post(server.url, json=note, headers=stateless_headers(note)).status_code == 202
    batch = [stateless_request("tools/list"), stateless_request("prompts/list")]
    response = http.post(server.url, json=batch,
                         headers={"MCP-Protocol-Version": STATELESS_VERSION, "Accept": BOTH_TYPES})
    assert response.status_code == 400 and response.json()["error"]["code"] == -32600


def test_a_session_header_is_neither_read_nor_echoed(server, http):
    message = stateless_request("tools/list")
    response = post(http, server.url, message, **{"Mcp-Session-Id": "0" * 32})
    assert response.status_code == 200 and "mcp-session-id" not in response.headers


def test_body_meta_alone_selects_the_stateless_wire(server, http):
    message = stateless_request("server/discover")
    response = http.post(server.url, json=message, headers={"Accept": BOTH_TYPES})
    # No MCP-Protocol-Version header: served statelessly, and refused for the missing header.
    assert response.status_code == 400 and response.json()["error"]["code"] == -32020
    assert response.json()["id"] == message["id"]


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_naming_a_stateless_version_get_405(server, http, method):
    response = http.request(method, server.url,
                            headers={"MCP-Protocol-Version": STATELESS_VERSION, "Accept": BOTH_TYPES})
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert response.json()["error"]["code"] == -32600


def test_legacy_initialize_still_opens_a_session(server, http):
    response = http.post(server.url, json=initialize("2025-11-25"), headers={"Accept": BOTH_TYPES})
    assert response.status_code == 200 and "mcp-session-id" in response.headers

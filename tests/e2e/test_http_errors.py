"""Every HTTP-level refusal, by raw HTTP against the real server: status, JSON-RPC error body, no leaks."""

from __future__ import annotations

import json
import re
import secrets

import httpx
import pytest

from tests.e2e.raw_clients import (
    BOTH,
    LegacyStream,
    StreamableSession,
    client,
    initialize,
    notification,
    request,
)

pytestmark = pytest.mark.e2e

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
# What must never reach a client: stack traces, source paths, installed-package paths, HTML error pages.
LEAKS = re.compile(r"Traceback|File \"|site-packages|\.py\b|/work/|/home/|/usr/|<html|<!doctype", re.IGNORECASE)


def assert_clean(response: httpx.Response) -> None:
    """No 5xx, no HTML page, no traceback or file path in the body."""
    assert response.status_code < 500, (response.status_code, response.text)
    if response.content:
        assert "text/html" not in response.headers.get("content-type", ""), response.headers
    assert not LEAKS.search(response.text), response.text


# Refusals answered before the body is read (screening, method, Content-Type, size) cannot name its id.
BEFORE_THE_BODY = frozenset({401, 403, 405, 413, 415, 421})


def sent_id(response: httpx.Response) -> object:
    """The id of the request whose refusal response is, when its body was one JSON-RPC request; else None."""
    if response.status_code in BEFORE_THE_BODY:
        return None
    try:
        sent = json.loads(response.request.content)
    except (ValueError, RecursionError):
        return None
    return sent.get("id") if isinstance(sent, dict) else None


def assert_error(response: httpx.Response, status: int, code: int = INVALID_REQUEST) -> dict:
    """Check an HTTP refusal: its status, a JSON body with a JSON-RPC error and the sent request's id (null when
    there was no readable one); return the error."""
    assert_clean(response)
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json"), response.headers
    assert response.text.endswith("\n"), "JSON bodies end with a newline for curl"
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] == sent_id(response), body
    assert body["error"]["code"] == code, body
    assert body["error"]["message"], body
    return body["error"]


def unknown_session_id() -> str:
    """A well-formed session id that the server never issued."""
    return secrets.token_hex(16)


@pytest.fixture
def http():
    """A bounded httpx client for one test."""
    with client() as http:
        yield http


@pytest.fixture
def legacy(server, http):
    """An initialized legacy session on the default server."""
    with LegacyStream(http, server.base_url) as stream:
        stream.open()
        yield stream


@pytest.fixture
def streamable(server, http):
    """An initialized Streamable HTTP session (2025-06-18) on the default server."""
    session = StreamableSession(http, server.url)
    yield session
    session.delete()


# 400: missing or malformed session id, unparseable body
def test_streamable_request_without_session_header_is_400(server, http):
    answer = http.post(server.url, json=request("tools/list"), headers={"Accept": BOTH})
    error = assert_error(answer, 400)
    assert "Mcp-Session-Id" in error["message"]


def test_delete_without_session_header_is_400(server, http):
    assert_error(http.delete(server.url), 400)


def test_legacy_message_without_session_id_is_400(server, http):
    error = assert_error(http.post(server.base_url + "/messages", json=request("ping")), 400)
    assert "session_id" in error["message"]


# No session id by the specification (visible ASCII, 0x21-0x7E) or over SESSION_ID_MAX_CHARS (128): 400.
MALFORMED_QUERY_IDS = ["", "has space", "nul\x00", "caf\u00e9", "0" * 129]
MALFORMED_HEADER_IDS = [b"", b"has space", b"tab\there", b"caf\xe9", b"0" * 129]
# Visible ASCII, at most 128 characters, never issued (ours are 32 lowercase hex): a session the server does not
# know, so 404 and the client starts a new one.
FOREIGN_IDS = ["nope-nope-nope-nope-nope-nope", "abc", "../../etc/passwd", "Z" * 32, "A" * 32, "0" * 31, "0" * 33,
               "%00", "~" * 128]


@pytest.mark.parametrize("bad_id", MALFORMED_QUERY_IDS)
def test_malformed_legacy_session_id_is_400(server, http, bad_id):
    assert_error(http.post(server.url, params={"session_id": bad_id}, json=request("ping")), 400)
    assert_error(http.post(server.url, params={"sessionId": bad_id}, json=request("ping")), 400)
    assert_error(http.post(server.base_url + "/messages", params={"session_id": bad_id}, json=request("ping")), 400)
    assert_error(http.get(server.url, params={"session_id": bad_id}), 400)


@pytest.mark.parametrize("bad_id", MALFORMED_HEADER_IDS)
def test_malformed_streamable_session_id_is_400(server, http, bad_id):
    headers = {"Mcp-Session-Id": bad_id, "Accept": BOTH}
    assert_error(http.post(server.url, json=request("ping"), headers=headers), 400)
    assert_error(http.get(server.url, headers={**headers, "Accept": "text/event-stream"}), 400)
    assert_error(http.delete(server.url, headers=headers), 400)


@pytest.mark.parametrize("body", [b"{not json", b"", b"\xff\xfe", b'{"jsonrpc": "2.0", "id": 1,', b"[" * 5000])
def test_unparseable_body_is_400_parse_error(server, http, legacy, streamable, body):
    json_type = {"Content-Type": "application/json"}
    assert_error(http.post(legacy.endpoint, content=body, headers=json_type), 400, PARSE_ERROR)
    assert_error(http.post(server.url, content=body, headers={**json_type, "Accept": BOTH}), 400, PARSE_ERROR)
    assert_error(streamable.post(None, content=body, headers=json_type), 400, PARSE_ERROR)


# 404: unknown, expired or ended sessions
@pytest.mark.parametrize("foreign_id", FOREIGN_IDS)
def test_well_formed_id_the_server_never_issued_is_404(server, http, foreign_id):
    assert_error(http.post(server.url, params={"session_id": foreign_id}, json=request("ping")), 404)
    assert_error(http.post(server.url, params={"sessionId": foreign_id}, json=request("ping")), 404)
    assert_error(http.post(server.base_url + "/messages", params={"session_id": foreign_id}, json=request("ping")),
                 404)
    assert_error(http.get(server.url, params={"session_id": foreign_id}), 404)
    headers = {"Mcp-Session-Id": foreign_id, "Accept": BOTH}
    assert_error(http.post(server.url, json=request("ping"), headers=headers), 404)
    assert_error(http.get(server.url, headers={**headers, "Accept": "text/event-stream"}), 404)
    assert_error(http.delete(server.url, headers=headers), 404)


def test_unknown_session_is_404_on_every_route(server, http):
    missing = unknown_session_id()
    assert_error(http.post(server.url, params={"session_id": missing}, json=request("ping")), 404)
    assert_error(http.post(server.base_url + "/messages", params={"sessionId": missing}, json=request("ping")), 404)
    assert_error(http.get(server.url, params={"session_id": missing}), 404)
    headers = {"Mcp-Session-Id": missing, "Accept": BOTH}
    assert_error(http.post(server.url, json=request("ping"), headers=headers), 404)
    assert_error(http.get(server.url, headers={**headers, "Accept": "text/event-stream"}), 404)
    assert_error(http.delete(server.url, headers=headers), 404)


def test_session_after_delete_is_404(server, http):
    session = StreamableSession(http, server.url)
    assert session.call(request("ping"))["result"] == {}
    ended = session.delete()
    assert ended.status_code in (200, 204) and ended.text == ""
    assert_error(session.post(request("ping")), 404)
    assert_error(http.get(server.url, headers={**session.headers, "Accept": "text/event-stream"}), 404)
    assert_error(session.delete(), 404)


def test_legacy_session_is_not_usable_as_streamable_session(server, http, legacy):
    headers = {"Mcp-Session-Id": legacy.session_id, "Accept": BOTH}
    assert_error(http.post(server.url, json=request("ping"), headers=headers), 404)


# 405 and unknown paths: JSON, never HTML
@pytest.mark.parametrize(("method", "path"), [
    ("PUT", "/mcp"), ("PATCH", "/mcp"), ("GET", "/messages"), ("POST", "/sse"), ("DELETE", "/sse"),
    ("PUT", "/messages"),
])
def test_wrong_method_is_405_json(server, http, method, path):
    answer = http.request(method, server.base_url + path, json=request("ping"))
    error = assert_error(answer, 405)
    assert method in error["message"]
    assert "Allow" in answer.headers


def test_head_never_ends_a_session(server, http, streamable):
    # Flask adds HEAD to GET routes; a HEAD must be refused, and must not act like DELETE.
    answer = http.head(server.url, headers=streamable.headers)
    assert answer.status_code in (400, 405), answer.status_code
    assert streamable.call(request("ping"))["result"] == {}


def test_unknown_path_is_404_json(server, http):
    assert_error(http.get(server.base_url + "/no/such/page"), 404)


# 413: body over MCP_MAX_BODY_BYTES (the tuned server allows 4096 bytes)
def test_body_over_limit_is_413(tuned_server, http):
    big = initialize("2025-06-18")
    big["params"]["clientInfo"]["name"] = "x" * 5000
    error = assert_error(http.post(tuned_server.url, json=big, headers={"Accept": BOTH}), 413)
    assert "4096" in error["message"] and "MCP_MAX_BODY_BYTES" in error["message"]
    with LegacyStream(http, tuned_server.base_url) as stream:
        assert_error(stream.post(request("echo", {"text": "x" * 5000})), 413)
        # Without Content-Length (chunked), the limit holds while reading.
        chunks = (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * 1000
                  for _ in range(6))
        chunked = http.post(stream.endpoint, content=chunks, headers={"Content-Type": "application/json"})
        assert_error(chunked, 413)
        # The session still works afterwards.
        assert stream.call(request("ping"))["result"] == {}


def test_body_at_limit_is_accepted(tuned_server, http):
    message = initialize("2025-06-18")
    padding = 4096 - len(httpx.Request("POST", "/", json=message).content) - len(',"pad":""')
    message["params"]["pad"] = "y" * padding
    body = httpx.Request("POST", "/", json=message).content
    assert len(body) == 4096
    answer = http.post(tuned_server.url, content=body, headers={"Accept": BOTH, "Content-Type": "application/json"})
    assert answer.status_code == 200, answer.text


# 415: content type
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_non_json_content_type_is_415_with_curl_hint(server, http, legacy, content_type):
    headers = {"Content-Type": content_type} if content_type else {}
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    for url, extra in ((server.url, {"Accept": BOTH}), (legacy.endpoint, {})):
        error = assert_error(http.post(url, content=body, headers={**headers, **extra}), 415)
        assert "-H 'Content-Type: application/json'" in error["message"]


def test_json_with_charset_is_accepted(server, http):
    answer = http.post(server.url, content=httpx.Request("POST", "/", json=initialize("2025-06-18")).content,
                       headers={"Content-Type": "application/json; charset=utf-8", "Accept": BOTH})
    assert answer.status_code == 200, answer.text


# 403 and 421: Origin and Host
@pytest.mark.parametrize("origin", ["http://evil.example", "https://localhost.evil.example", "null"])
def test_foreign_origin_is_403(server, http, origin):
    headers = {"Origin": origin, "Accept": BOTH}
    error = assert_error(http.post(server.url, json=initialize("2025-06-18"), headers=headers), 403)
    assert "MCP_ALLOWED_ORIGINS" in error["message"]
    assert_error(http.get(server.url, headers={"Origin": origin, "Accept": "text/event-stream"}), 403)


def test_localhost_origin_is_allowed(server, http):
    headers = {"Origin": "http://localhost:6274", "Accept": BOTH}
    assert http.post(server.url, json=initialize("2025-06-18"), headers=headers).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example"])
def test_foreign_host_on_loopback_listener_is_421(server, http, host):
    headers = {"Host": host, "Accept": BOTH}
    error = assert_error(http.post(server.url, json=initialize("2025-06-18"), headers=headers), 421)
    assert "MCP_ALLOWED_HOSTS" in error["message"]
    assert_error(http.get(server.url, headers={"Host": host}), 421)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_loopback_host_is_allowed(server, http, host):
    headers = {"Host": f"{host}:{server.port}", "Accept": BOTH}
    assert http.post(server.url, json=initialize("2025-06-18"), headers=headers).status_code == 200


# 406: Accept
@pytest.mark.parametrize("accept", ["text/html", "image/png", "application/xml"])
def test_post_accepting_neither_json_nor_sse_is_406(server, http, accept):
    assert_error(http.post(server.url, json=initialize("2025-06-18"), headers={"Accept": accept}), 406)


def test_standalone_stream_without_event_stream_accept_is_406(http, streamable):
    answer = http.get(streamable.url, headers={**streamable.headers, "Accept": "application/json"})
    assert_error(answer, 406)


def test_json_only_accept_gets_json(streamable):
    answer = streamable.post(request("tools/list"), accept="application/json")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    assert "tools" in answer.json()["result"]


# 409: one standalone stream per session
def test_second_standalone_stream_is_409(streamable):
    # A short read timeout: the stream's status and headers must come at once, not with the first keepalive.
    with streamable.open_stream(timeout=5.0) as first:
        assert first.status_code == 200
        assert first.headers["content-type"].startswith("text/event-stream")
        with streamable.open_stream() as second:
            second.read()
            assert_error(second, 409)


# 400: MCP-Protocol-Version
@pytest.mark.parametrize("version", ["1999-01-01", "2025-13-45", "latest", ""])
def test_unsupported_protocol_version_header_is_400(streamable, version):
    error = assert_error(streamable.post(request("ping"), headers={"MCP-Protocol-Version": version}), 400)
    assert "MCP-Protocol-Version" in error["message"]


def test_supported_protocol_version_header_is_accepted(streamable):
    answer = streamable.post(request("ping"), accept="application/json",
                             headers={"MCP-Protocol-Version": "2025-06-18"})
    assert answer.status_code == 200 and answer.json()["result"] == {}


# 202: notifications and client responses
@pytest.mark.parametrize("message", [
    notification("notifications/initialized"),
    notification("notifications/cancelled", {"requestId": 987654, "reason": "test"}),
    notification("notifications/roots/list_changed"),
    {"jsonrpc": "2.0", "id": "srv-1", "result": {}},
    {"jsonrpc": "2.0", "id": 77, "error": {"code": -1, "message": "refused"}},
])
def test_notifications_and_client_responses_get_202_without_body(streamable, legacy, message):
    answer = streamable.post(message)
    assert answer.status_code == 202, answer.text
    assert answer.content == b""
    posted = legacy.post(message)
    assert posted.status_code == 202 and posted.content == b""
    # The session still answers afterwards (nothing above is mistaken for a request).
    assert legacy.call(request("ping"))["result"] == {}


# Batches: only on 2025-03-26 sessions
@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_streamable_batch_is_rejected_after_2025_03_26(server, http, version):
    session = StreamableSession(http, server.url, version)
    answer = session.post([request("ping"), request("tools/list")])
    error = assert_error(answer, 400, INVALID_REQUEST)
    assert "batch" in error["message"].lower()
    session.delete()


def test_streamable_batch_is_answered_on_2025_03_26(server, http):
    session = StreamableSession(http, server.url, "2025-03-26")
    first, second = request("ping"), request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 40}})
    answer = session.post([first, second, notification("notifications/roots/list_changed")],
                          accept="application/json")
    assert answer.status_code == 200, answer.text
    by_id = {item["id"]: item for item in answer.json()}
    assert set(by_id) == {first["id"], second["id"]}
    assert by_id[first["id"]]["result"] == {}
    assert by_id[second["id"]]["result"]["content"] == [{"type": "text", "text": "42"}]
    session.delete()


def test_legacy_batch_is_rejected_on_2024_11_05(legacy):
    assert legacy.post([request("ping"), request("ping")]).status_code == 202
    event = legacy.next_event()
    assert event.event == "message" and event.id
    body = event.json()
    assert body["id"] is None and body["error"]["code"] == INVALID_REQUEST
    assert "batch" in body["error"]["message"].lower()


def test_legacy_batch_is_answered_on_2025_03_26(server, http):
    with LegacyStream(http, server.base_url) as stream:
        stream.open("2025-03-26")
        first, second = request("ping"), request("tools/call", {"name": "echo", "arguments": {"text": "b"}})
        assert stream.post([first, second]).status_code == 202
        answers = stream.next_event().json()
        assert isinstance(answers, list)
        assert {item["id"] for item in answers} == {first["id"], second["id"]}


# A sweep of odd requests: whatever the answer, it is JSON-or-empty, never a 500, HTML or a leak.
ODD_BODIES = [
    b"null", b"1", b'"text"', b"[]", b"{}", b"[1, 2]", b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', b'{"jsonrpc": "2.0", "id": 1, "method": 5}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": []}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": {"x": 1}}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": "x"}}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1e400}}}',
    b'{"jsonrpc": "2.0", "id": 99999999999999999999999, "method": "ping"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "\\u0000"}', b'{"a": "\xed\xa0\x80"}',
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 5}}',
]


@pytest.mark.parametrize("body", ODD_BODIES)
def test_odd_bodies_never_break_the_server(server, http, legacy, streamable, body):
    headers = {"Content-Type": "application/json"}
    assert_clean(http.post(legacy.endpoint, content=body, headers=headers))
    assert_clean(http.post(server.url, content=body, headers={**headers, "Accept": BOTH}))
    assert_clean(streamable.post(None, content=body, headers=headers))
    assert_clean(streamable.post(None, content=body, headers=headers, accept="text/event-stream"))
    assert legacy.call(request("ping"))["result"] == {}


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/mcp/"), ("POST", "//mcp"), ("GET", "/mcp/../etc/passwd"), ("POST", "/messages/"),
    ("GET", "/%2e%2e/%2e%2e/etc/passwd"), ("OPTIONS", "/mcp"), ("TRACE", "/mcp"), ("GET", "/healthz"),
])
def test_odd_paths_and_methods_never_answer_html_or_500(server, http, method, path):
    answer = http.request(method, server.base_url + path, content=b"{}",
                          headers={"Content-Type": "application/json"})
    assert_clean(answer)

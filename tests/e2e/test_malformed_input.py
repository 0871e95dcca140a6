"""Bad input a client chose: a broken chunked body, integers past 64 bits, an envelope key sent twice.

Each is the client's error (400, -32600 or -32602), never a 5xx or -32603, on the hot
path and on the Flask path (MCP_CORS_ORIGINS sends POSTs through Flask), legacy and
Streamable alike.
"""

from __future__ import annotations

import pytest

from tests.e2e.raw_clients import LegacyStream, StreamableSession, client
from tests.e2e.raw_http import exchange
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e

VERSION = "2025-03-26"  # the version with batches
BAD_CHUNK = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             b"Accept: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")


@pytest.fixture(scope="module", params=["hot path", "flask"])
def any_path_server(request):
    """The default server, once with the WSGI hot path and once with POSTs through Flask."""
    env = {} if request.param == "hot path" else {"MCP_CORS_ORIGINS": "http://app.example"}
    with ServerProcess(env=env) as process:
        yield process


def test_a_bad_chunk_size_is_400_with_a_json_rpc_error_and_the_connection_closes(any_path_server):
    answer = exchange(any_path_server.port, BAD_CHUNK)
    assert answer.status == 400
    assert answer.headers["content-type"] == "application/json"
    error = answer.json()["error"]
    assert error["code"] == -32600 and "chunked" in error["message"]
    assert answer.rest == b""  # one answer, then the connection ends: where a next request starts is unknown
    assert "Traceback" not in any_path_server.read_log()


def raw_post(session: StreamableSession, body: bytes):
    """POST raw bytes on a Streamable session, asking for JSON."""
    return session.http.post(session.url, content=body,
                             headers={**session.headers, "Accept": "application/json",
                                      "Content-Type": "application/json"})


BIG = b"99999999999999999999"  # 20 digits: past 2**64


@pytest.mark.parametrize(("body", "pointer"), [
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":' + BIG + b',"b":1}}}',
     "params/arguments/a"),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":-' + BIG + b',"b":1}}}',
     "params/arguments/a"),
    (b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},'
     b'"_meta":{"progressToken":[1,' + BIG + b']}}}', "params/_meta/progressToken/1"),
])
def test_an_integer_past_64_bits_in_params_is_invalid_params_naming_where(any_path_server, body, pointer):
    with client() as http:
        session = StreamableSession(http, any_path_server.url, VERSION)
        answer = raw_post(session, body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["id"] == 7
        error = answer.json()["error"]
        assert error["code"] == -32602 and pointer in error["message"] and "64 bits" in error["message"]


def test_an_id_past_64_bits_is_invalid_request(any_path_server):
    with client() as http:
        session = StreamableSession(http, any_path_server.url, VERSION)
        answer = raw_post(session, b'{"jsonrpc":"2.0","id":' + BIG + b',"method":"ping"}')
        assert answer.status_code == 400
        assert answer.json()["id"] is None
        assert answer.json()["error"]["code"] == -32600 and "64 bits" in answer.json()["error"]["message"]


def test_a_sum_past_64_bits_is_answered_exactly_not_as_an_internal_error(any_path_server):
    with client() as http:
        session = StreamableSession(http, any_path_server.url, VERSION)
        answer = raw_post(session, b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"add",'
                                   b'"arguments":{"a":18446744073709551615,"b":1}}}')
        assert answer.status_code == 200
        assert b'"text":"18446744073709551616"' in answer.content


TWO_METHODS = b'{"jsonrpc":"2.0","id":6,"method":"ping","method":"tools/list"}'
ESCAPED_SECOND_METHOD = b'{"jsonrpc":"2.0","id":6,"method":"ping","met\\u0068od":"tools/list"}'


@pytest.mark.parametrize("body", [TWO_METHODS, ESCAPED_SECOND_METHOD])
def test_a_repeated_envelope_key_is_invalid_request_with_the_id_on_streamable_http(any_path_server, body):
    with client() as http:
        session = StreamableSession(http, any_path_server.url, VERSION)
        answer = raw_post(session, body)
        assert answer.status_code == 400
        assert answer.json() == {"jsonrpc": "2.0", "id": 6, "error": {
            "code": -32600, "message": 'Invalid Request: the message repeats "method"; send each member once'}}


def test_a_repeated_id_leaves_the_id_out(any_path_server):
    with client() as http:
        session = StreamableSession(http, any_path_server.url, VERSION)
        answer = raw_post(session, b'{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}')
        assert answer.status_code == 400
        assert answer.json()["id"] is None and '"id"' in answer.json()["error"]["message"]


def test_a_repeated_key_in_a_batch_refuses_that_message_only(any_path_server):
    with client() as http:
        session = StreamableSession(http, any_path_server.url, VERSION)
        batch = (b'[{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"},'
                 b'{"jsonrpc":"2.0","id":2,"method":"ping"}]')
        answer = raw_post(session, batch)
        assert answer.status_code == 200
        by_id = {item["id"]: item for item in answer.json()}
        assert by_id[1]["error"]["code"] == -32600 and "repeats" in by_id[1]["error"]["message"]
        assert by_id[2]["result"] == {}


def test_a_repeated_envelope_key_is_refused_on_the_legacy_stream(any_path_server):
    with client() as http, LegacyStream(http, any_path_server.base_url) as stream:
        stream.open()
        posted = http.post(stream.endpoint, content=TWO_METHODS, headers={"Content-Type": "application/json"})
        assert posted.status_code == 202
        answer = stream.wait_for(6)
        assert answer["error"]["code"] == -32600 and "repeats" in answer["error"]["message"]
        assert "result" not in answer  # tools/list did not run


def test_a_body_of_one_notification_with_a_repeated_key_is_refused(any_path_server):
    with client() as http:
        session = StreamableSession(http, any_path_server.url, VERSION)
        body = b'{"jsonrpc":"2.0","method":"notifications/initialized","params":{},"params":{}}'
        answer = raw_post(session, body)
        assert answer.status_code == 400 and answer.json()["error"]["code"] == -32600

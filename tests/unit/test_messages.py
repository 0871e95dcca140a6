"""messages: decoding a body and classifying each message before anything is dispatched."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.messages import (
    INVALID,
    NOTIFICATION,
    REQUEST,
    RESPONSE,
    ParseFailure,
    classify,
    is_valid_id,
    parse_body,
)


def test_a_request_is_classified_with_its_id_method_and_params():
    message = classify({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add"}})
    assert (message.kind, message.id, message.method, message.params) == (REQUEST, 1, "tools/call", {"name": "add"})
    assert message.error is None


def test_a_message_without_id_is_a_notification():
    message = classify({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert message.kind == NOTIFICATION
    assert message.id is None


@pytest.mark.parametrize("raw", [{"jsonrpc": "2.0", "id": "a", "result": {}},
                                 {"jsonrpc": "2.0", "id": 3, "error": {"code": -1, "message": "x"}}])
def test_a_result_or_error_without_method_is_a_client_response(raw):
    message = classify(raw)
    assert message.kind == RESPONSE
    assert message.id == raw["id"]
    assert message.raw is raw


@pytest.mark.parametrize(
    "raw",
    [
        {"jsonrpc": "2.0", "id": None, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": 1},
    ],
)
def test_malformed_responses_are_invalid(raw):
    assert classify(raw).kind == INVALID


@pytest.mark.parametrize("value, valid", [("x", True), ("", True), (0, True), (-3, True), (2**53, True),
                                          (None, False), (True, False), (False, False), (1.0, False),
                                          ({}, False), ([], False)])
def test_ids_are_strings_or_integers_only(value, valid):
    assert is_valid_id(value) is valid


def test_meta_is_taken_out_of_params_and_kept_aside():
    raw = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "add", "_meta": {"progressToken": "p"}}}
    message = classify(raw)
    assert message.params == {"name": "add"}
    assert message.meta == {"progressToken": "p"}
    # The original stays intact (transports may log or forward it).
    assert "_meta" in raw["params"]


def test_meta_that_is_not_an_object_is_dropped():
    message = classify({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": "x"}})
    assert (message.params, message.meta) == ({}, {})


def test_null_or_missing_params_become_an_empty_object():
    assert classify({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None}).params == {}
    assert classify({"jsonrpc": "2.0", "id": 1, "method": "ping"}).params == {}


def test_positional_params_are_invalid_params_with_the_id():
    message = classify({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": [1]})
    assert message.kind == INVALID
    assert message.error["error"]["code"] == -32602
    assert message.error["id"] == 4


@pytest.mark.parametrize(
    "raw, expected_id",
    [
        ({"id": 5, "method": "ping"}, 5),
        ({"jsonrpc": "2.1", "id": "r", "method": "ping"}, "r"),
        ({"jsonrpc": "2.0", "id": 6, "method": 6}, 6),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}, None),
        (["not", "an", "object"], None),
        ("ping", None),
    ],
)
def test_invalid_requests_carry_minus_32600_and_the_id_when_readable(raw, expected_id):
    message = classify(raw)
    assert message.kind == INVALID
    assert message.error == {"jsonrpc": "2.0", "id": expected_id, "error": message.error["error"]}
    assert message.error["error"]["code"] == -32600
    assert message.error["error"]["message"].startswith("Invalid Request")


def test_parse_body_reads_a_single_message():
    body = parse_body(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
    assert body.is_batch is False
    assert [m.kind for m in body.messages] == [REQUEST]
    assert [m.id for m in body.messages if m.kind == REQUEST] == [1]


def test_parse_body_reads_a_batch_and_keeps_order():
    body = parse_body(b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}, 7,'
                      b' {"jsonrpc": "2.0", "method": "notifications/x"}]')
    assert body.is_batch is True
    assert [m.kind for m in body.messages] == [REQUEST, INVALID, NOTIFICATION]


def test_parse_body_rejects_an_empty_batch_as_one_invalid_message():
    body = parse_body(b"[]")
    assert body.is_batch is False
    assert [m.error["error"]["code"] for m in body.messages if m.kind == INVALID] == [-32600]


@pytest.mark.parametrize("data", [b"", b"{", b"not json", b"\xff", b'{"a": 1} trailing'])
def test_parse_body_raises_parse_failure_with_a_minus_32700_response(data):
    with pytest.raises(ParseFailure) as caught:
        parse_body(data)
    assert caught.value.response["id"] is None
    assert caught.value.response["error"]["code"] == -32700


@pytest.mark.parametrize(("data", "said"), [
    (b'{"jsonrpc": "2.0",\n "id": }', "the body is not valid JSON (line 2, column 8)"),
    (b'{"a": 1} trailing', "the body is not valid JSON (line 1, column 10)"),
    (b"\xff\xfe", "the body is not JSON: it is not UTF-8 text"),
    (b'{"text": "\\ud800"}', "without its pair (a lone surrogate) (line 1, column 11)"),
    (b'{"text": "\\udc00x"}', "without its pair (a lone surrogate) (line 1, column 11)"),
])
def test_a_parse_error_says_what_is_wrong_and_where(data, said):
    with pytest.raises(ParseFailure) as caught:
        parse_body(data)
    assert said in caught.value.response["error"]["message"]


@pytest.mark.parametrize("number", [b"1" + b"0" * 400, b"1e400", b"-1e400"])
def test_a_number_past_a_doubles_range_is_named_in_the_parse_error(number):
    with pytest.raises(ParseFailure) as caught:
        parse_body(b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"n": ' + number + b"}}")
    assert caught.value.response["error"]["code"] == -32700
    assert "a number in the body is too large to read" in caught.value.response["error"]["message"]


@pytest.mark.parametrize("body", [
    b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": ' + b"[" * 1025 + b"]" * 1025 + b"}}",
    b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
    b"[" * 5000,  # unfinished as well: the depth is what the reader meets first
], ids=["1025", "100000", "unfinished"])
def test_json_nested_past_what_orjson_reads_is_a_parse_error_naming_the_depth(body):
    with pytest.raises(ParseFailure) as caught:
        parse_body(body)
    assert caught.value.response["id"] is None
    assert caught.value.response["error"]["code"] == -32700
    assert "nested deeper than 1024 levels" in caught.value.response["error"]["message"]
    assert "MCP_MAX_JSON_DEPTH" in caught.value.response["error"]["message"]


@pytest.mark.parametrize(("value", "named"), [("true", "a boolean"), ("1.5", "fraction"), ("1e2", "exponent"),
                                             ("{}", "an object"), ("[1]", "an array"), ("null", "null")])
def test_an_id_of_the_wrong_type_is_named_for_what_it_is(value, named):
    body = parse_body(b'{"jsonrpc": "2.0", "id": ' + value.encode() + b', "method": "ping"}')
    message = body.messages[0].error["error"]["message"]
    assert named in message
    assert value == "null" or "null" not in message


def test_parse_body_accepts_utf8_text():
    body = parse_body('{"jsonrpc": "2.0", "id": "ü", "method": "ping"}'.encode())
    assert body.messages[0].id == "ü"

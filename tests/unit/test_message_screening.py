"""messages: the exact second reading that refuses repeated envelope keys and integers past 64 bits."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.encoding import dumps, dumps_line, loads, loads_exact
from flask_mcp_gevent.messages import INVALID, REQUEST, RESPONSE, ParseFailure, needs_exact_reading, parse_body


def only(data: bytes):
    """The one message of a body."""
    [message] = parse_body(data).messages
    return message


@pytest.mark.parametrize("key", ["jsonrpc", "id", "method", "params"])
def test_each_repeated_envelope_key_is_invalid_request(key):
    members = {"jsonrpc": '"2.0"', "id": "1", "method": '"ping"', "params": "{}"}
    data = ("{" + ",".join(f'"{k}":{v}' for k, v in members.items()) + f',"{key}":{members[key]}' + "}").encode()
    message = only(data)
    assert message.kind == INVALID
    assert message.error["error"]["code"] == -32600 and f'"{key}"' in message.error["error"]["message"]
    assert message.id == (None if key == "id" else 1)


def test_a_repeated_result_in_a_client_response_is_invalid():
    assert only(b'{"jsonrpc":"2.0","id":"s-1","result":{},"result":{"x":1}}').kind == INVALID


def test_a_key_repeated_only_inside_params_is_no_envelope_repeat():
    message = only(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
                   b'"arguments":{"id":1,"method":"x","text":"params"}}}')
    assert message.kind == REQUEST


def test_a_batch_of_distinct_messages_needs_no_exact_reading():
    data = b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"result":{}}]'
    assert not needs_exact_reading(data, loads(data))
    assert [m.kind for m in parse_body(data).messages] == [REQUEST, RESPONSE]


def test_a_plain_request_needs_no_exact_reading():
    data = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}'
    assert not needs_exact_reading(data, [loads(data)])


@pytest.mark.parametrize("number", [2**63 - 1, -(2**63), 2**64 - 1])
def test_the_64_bit_edges_are_accepted(number):
    message = only(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n":%d}}' % number)
    assert message.kind == REQUEST and message.params["n"] == number


@pytest.mark.parametrize("number", [2**64, -(2**63) - 1, 10**30])
def test_one_past_the_64_bit_edges_is_invalid_params(number):
    message = only(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n":[%d]}}' % number)
    assert message.kind == INVALID and message.id == 1
    assert message.error["error"]["code"] == -32602 and "params/n/0" in message.error["error"]["message"]


def test_a_long_digit_run_inside_a_string_is_fine():
    message = only(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"text":"123456789012345678901234"}}')
    assert message.kind == REQUEST


def test_a_number_with_more_digits_than_python_reads_is_refused_not_raised():
    with pytest.raises(ParseFailure) as refused:
        parse_body(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":' + b"9" * 5000 + b"}}")
    assert refused.value.response["error"]["code"] in (-32700, -32600)


def test_loads_exact_remembers_repeated_keys_per_object():
    decoded = loads_exact(b'{"a":1,"a":2,"b":{"c":1}}')
    assert decoded == {"a": 2, "b": {"c": 1}}
    assert decoded.repeated == {"a"} and decoded["b"].repeated == frozenset()


def test_integers_past_64_bits_are_encoded_exactly():
    assert dumps({"n": 2**64}) == b'{"n":18446744073709551616}'
    assert dumps_line([-(2**70)]) == b"[-1180591620717411303424]\n"

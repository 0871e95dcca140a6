"""Integers past 64 bits: refused in what a client sends (never rounded), written exactly in what a tool returns."""

from __future__ import annotations

import pytest

BIG = 2**64  # one past what orjson reads as an integer


@pytest.mark.parametrize(("params", "where"), [
    (f'{{"name":"add","arguments":{{"a":{BIG},"b":1}}}}', "params/arguments/a"),
    (f'{{"name":"add","arguments":{{"a":1,"b":-{BIG}}}}}', "params/arguments/b"),
    (f'{{"name":"echo","arguments":{{"text":"x"}},"_meta":{{"progressToken":{BIG}}}}}', "params/_meta/progressToken"),
])
def test_an_integer_past_64_bits_in_params_is_invalid_params(make_rpc, params, where):
    rpc = make_rpc("2025-06-18")
    response = rpc.one(f'{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{params}}}')
    assert response["id"] == 3
    assert response["error"]["code"] == -32602 and where in response["error"]["message"]


def test_an_id_past_64_bits_is_invalid_request_without_an_id(make_rpc):
    rpc = make_rpc("2025-06-18")
    response = rpc.one(f'{{"jsonrpc":"2.0","id":{BIG},"method":"ping"}}')
    assert response["id"] is None and response["error"]["code"] == -32600


def test_the_largest_64_bit_integers_pass_and_a_sum_past_them_is_exact(make_rpc):
    rpc = make_rpc("2025-06-18")
    response = rpc.request("tools/call", {"name": "add", "arguments": {"a": 2**64 - 1, "b": 1}})
    assert response["result"]["structuredContent"] == {"result": 2**64}
    assert response["result"]["content"][0]["text"] == str(2**64)

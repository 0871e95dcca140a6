"""Params that do not fit a method are -32602 in the protocol's words, never Python's binding errors."""

from __future__ import annotations

import pytest

PYTHON_WORDS = ("required argument", "positional", "keyword", "TypeError", "multiple values")


def assert_invalid_params(response: dict, message: str) -> None:
    """-32602 with exactly this message, no data, and nothing Python said."""
    error = response["error"]
    assert error == {"code": -32602, "message": message}
    assert not any(word in message for word in PYTHON_WORDS)


def test_a_missing_param_is_named_as_required(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert_invalid_params(rpc.request("logging/setLevel", {}), "Invalid params: 'level' is required")


def test_several_missing_params_are_named_together(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert_invalid_params(rpc.request("completion/complete", {}),
                          "Invalid params: 'ref' and 'argument' are required")


@pytest.mark.parametrize("method", ["logging/setLevel", "ping", "tools/list"])
def test_a_param_named_ctx_is_not_a_parameter(make_rpc, method):
    rpc = make_rpc("2025-06-18")
    assert_invalid_params(rpc.request(method, {"ctx": 1, "level": "info"}),
                          f"Invalid params: 'ctx' is not a parameter of {method}")


def test_params_as_a_list_are_invalid_params(make_rpc):
    rpc = make_rpc("2025-06-18")
    response = rpc.one('{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":["info"]}')
    assert response["id"] == 4
    assert_invalid_params(response, 'Invalid params: "params" must be an object')


@pytest.mark.parametrize(("method", "params", "message"), [
    ("resources/unsubscribe", {"uri": 5}, "Invalid params: 'uri' must be a string"),
    ("resources/subscribe", {"uri": ""}, "Invalid params: 'uri' must be a non-empty string"),
    ("tools/call", {"name": "add", "arguments": [1, 2]}, "Invalid params: 'arguments' must be an object"),
])
def test_a_wrongly_typed_param_is_invalid_params_naming_it(make_rpc, method, params, message):
    rpc = make_rpc("2025-06-18")
    error = rpc.request(method, params)["error"]
    assert error["code"] == -32602 and error["message"] == message


def test_unknown_params_are_still_ignored(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert rpc.request("ping", {"fromTheFuture": True}) == {"jsonrpc": "2.0", "id": 1, "result": {}}

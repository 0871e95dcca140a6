"""The error table: one test per JSON-RPC error row, with the id echoed whenever it can be read."""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent import errors
from flask_mcp_gevent.protocol import methods as protocol
from flask_mcp_gevent.protocol.request_context import RequestContext
from flask_mcp_gevent.stateless.methods import STATELESS_METHODS
from mcp_tools import Registry, resource


# -32700 parse error
@pytest.mark.parametrize("body", [b"{not json", b'{"jsonrpc": "2.0", "id": 1,', b"\xff\xfe", b"", b"nul"])
def test_unparseable_body_is_a_parse_error_with_null_id(rpc, body):
    response = rpc.one(body)
    assert response == {"jsonrpc": "2.0", "id": None, "error": response["error"]}
    assert response["error"]["code"] == -32700
    assert "JSON" in response["error"]["message"]


# -32600 invalid request
@pytest.mark.parametrize(
    "body",
    [
        '{"jsonrpc": "2.0", "id": null, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": [1], "method": "ping"}',
        '{"jsonrpc": "2.0", "id": true, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": false, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
    ],
    ids=["null", "object", "array", "true", "false", "float"],
)
def test_ids_other_than_string_or_integer_are_invalid_requests(rpc, body):
    response = rpc.one(body)
    assert response["error"]["code"] == -32600
    assert response["id"] is None
    assert "id" in response["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [
        '{"id": 9, "method": "ping"}',
        '{"jsonrpc": "1.0", "id": 9, "method": "ping"}',
        '{"jsonrpc": 2.0, "id": 9, "method": "ping"}',
    ],
    ids=["missing", "1.0", "number"],
)
def test_missing_or_wrong_jsonrpc_is_invalid_request_with_the_id(rpc, body):
    response = rpc.one(body)
    assert response["error"]["code"] == -32600
    assert response["id"] == 9
    assert "jsonrpc" in response["error"]["message"]


@pytest.mark.parametrize("body", ["5", '"ping"', "null", "true"])
def test_a_message_that_is_not_an_object_is_invalid_request(rpc, body):
    response = rpc.one(body)
    assert response["error"]["code"] == -32600
    assert response["id"] is None


def test_an_empty_batch_is_invalid_request(rpc):
    response = rpc.one("[]")
    assert response["error"]["code"] == -32600
    assert response["id"] is None
    assert "empty batch" in response["error"]["message"]


@pytest.mark.parametrize(
    "body",
    ['{"jsonrpc": "2.0", "id": "m", "method": 5}', '{"jsonrpc": "2.0", "id": "m", "method": ""}'],
)
def test_a_method_that_is_not_a_name_is_invalid_request_with_the_id(rpc, body):
    response = rpc.one(body)
    assert response["error"]["code"] == -32600
    assert response["id"] == "m"


def test_a_message_without_method_result_or_error_is_invalid_request_with_the_id(rpc):
    response = rpc.one('{"jsonrpc": "2.0", "id": 4}')
    assert response["error"]["code"] == -32600
    assert response["id"] == 4


# -32601 method not found
@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
@pytest.mark.parametrize("method", ["server/discover", "tools/destroy", "shutdown", "no.such.method"])
def test_unknown_methods_are_method_not_found(make_rpc, version, method):
    response = make_rpc(version).request(method, {}, request_id="u")
    assert response["id"] == "u"
    assert response["error"]["code"] == -32601
    assert method in response["error"]["message"]
    assert "data" not in response["error"]


# -32602 invalid params
@pytest.mark.parametrize("params", ["[1, 2]", '"text"', "7"])
def test_params_that_are_not_an_object_are_invalid_params_with_the_id(make_rpc, params):
    response = make_rpc("2025-06-18").one(f'{{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {params}}}')
    assert response["error"]["code"] == -32602
    assert response["id"] == 8


def test_null_params_are_treated_as_no_params(make_rpc):
    response = make_rpc("2025-06-18").one('{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": null}')
    assert response["result"] == {}


# -32603 internal error
def test_an_unexpected_handler_exception_is_internal_error_without_detail(server, make_rpc, monkeypatch, mcp_log):
    rpc = make_rpc("2025-06-18")

    def broken(*_args, **_kwargs):
        raise RuntimeError("boom at /srv/secret/path.py")

    monkeypatch.setattr(RequestContext, "permits", broken)
    response = rpc.request("tools/list", {}, request_id=11)
    assert response["id"] == 11
    error = response["error"]
    assert error["code"] == -32603
    assert error["message"] == "Internal error"
    assert set(error["data"]) == {"correlationId"}
    assert "boom" not in str(response) and "RuntimeError" not in str(response)
    assert error["data"]["correlationId"] in mcp_log.text
    assert "boom at /srv/secret/path.py" in mcp_log.text


def test_a_resource_reader_that_lets_a_gevent_timeout_escape_is_internal_error(make_server, make_rpc, mcp_log):
    # A BaseException, not an Exception: it used to end the request's greenlet with no response at all.
    @resource("test://slow", name="slow")
    def slow() -> str:
        """Time out the way `with gevent.Timeout(s):` does when nothing catches it."""
        raise gevent.Timeout(0.01)

    registry = Registry()
    registry.add_function(slow)
    rpc = make_rpc("2025-06-18", on=make_server(registry=registry))
    response = rpc.request("resources/read", {"uri": "test://slow"}, request_id=12)
    assert response["id"] == 12
    assert response["error"]["code"] == -32603
    assert response["error"]["data"]["correlationId"] in mcp_log.text


def test_every_registered_method_is_guarded_against_leaking_exceptions():
    guard_code = protocol.guarded(lambda ctx: None).__code__
    tables = {**protocol.SESSION_METHODS, **STATELESS_METHODS}
    unguarded = [name for name, fn in tables.items() if getattr(fn, "__code__", None) is not guard_code]
    assert protocol.SESSION_METHODS and unguarded == []


# -32001 / -32002 and the rest of the table
def test_error_codes_have_their_json_rpc_and_mcp_values():
    assert errors.PARSE_ERROR == -32700
    assert errors.INVALID_REQUEST == -32600
    assert errors.METHOD_NOT_FOUND == -32601
    assert errors.INVALID_PARAMS == -32602
    assert errors.INTERNAL_ERROR == -32603
    assert errors.PERMISSION_DENIED == -32001
    assert errors.RESOURCE_NOT_FOUND == -32002


def test_a_denied_tool_call_is_permission_denied(server, make_rpc, monkeypatch):
    rpc = make_rpc("2025-06-18")
    monkeypatch.setattr(RequestContext, "permits", lambda ctx, kind, name: name != "add")
    response = rpc.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert response["error"]["code"] == -32001
    assert "add" in response["error"]["message"]
    listed = [t["name"] for t in rpc.request("tools/list", {}, request_id=2)["result"]["tools"]]
    assert "add" not in listed and "echo" in listed


def test_error_objects_carry_no_null_data(rpc):
    rpc.initialize("2025-06-18")
    response = rpc.request("initialize", {"protocolVersion": "2025-06-18"}, request_id=2)
    assert response["error"]["code"] == -32600
    assert "data" not in response["error"]

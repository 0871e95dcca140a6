"""tools/call: the seed's tools, result shapes per version, validation and failing tools."""

from __future__ import annotations

import math
from datetime import datetime

import gevent
import pytest

from mcp_tools import ProtocolError, Registry, ToolError, ToolResult, text, tool

OBJECT = {"type": "object", "properties": {}, "additionalProperties": False}
SECRET = "secret-detail /srv/app/credentials.py line 42"


@tool(input_schema=OBJECT)
def explode() -> str:
    """Fail with an unexpected exception."""
    raise RuntimeError(SECRET)


@tool(input_schema=OBJECT)
def refuse() -> str:
    """Fail with a message meant for the client."""
    raise ToolError("the answer is no")


@tool(input_schema=OBJECT)
def describe() -> dict:
    """Return an object, which becomes structuredContent as it is."""
    return {"name": "flask", "stars": 3}


@tool(input_schema=OBJECT)
def listing() -> list:
    """Return a list, which structuredContent must wrap."""
    return [1, 2]


@tool(input_schema=OBJECT)
def blocks() -> ToolResult:
    """Return explicit content blocks."""
    return ToolResult(content=[text("one"), text("two")], structured={"count": 2})


@tool(input_schema=OBJECT, output_schema={"type": "object", "properties": {"result": {"type": "integer"}},
                                          "required": ["result"]})
def liar() -> str:
    """Return something outside the declared outputSchema."""
    return "not an integer"


@tool
def ratio(numerator: float, denominator: float) -> float:
    """Divide, as floats do: nan or infinity when the denominator is zero."""
    return math.copysign(math.inf, numerator) if numerator else math.nan


@tool(input_schema={"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]})
def whoami(who: str, ctx) -> str:
    """Echo the session the context belongs to."""
    return f"{who}@{ctx.session_id}"


class NotAnError(BaseException):
    """A BaseException of a tool's own, neither Exception nor the server's control flow."""


# What a tool may let escape that is not an Exception: a gevent.Timeout from `with gevent.Timeout(s):`, sys.exit()
# (argparse's, say), and the like. Each must fail the call, not leave it unanswered or stop the worker.
ESCAPES = {
    "gevent.Timeout": lambda: gevent.Timeout(0.01),
    "SystemExit": lambda: SystemExit(2),
    "KeyboardInterrupt": KeyboardInterrupt,
    "GeneratorExit": GeneratorExit,
    "BaseException": lambda: NotAnError(SECRET),
}


@tool
def escape(kind: str) -> str:
    """Let a BaseException that is not an Exception escape.

    Args:
        kind: Which one, a key of ESCAPES.
    """
    raise ESCAPES[kind]()


@tool(input_schema=OBJECT)
def unservable() -> str:
    """Refuse the request with a JSON-RPC error whose data JSON cannot carry."""
    raise ProtocolError("cannot serve this", code=-32050, data={"ids": {1, 2}})


# Return values JSON cannot carry: the tool's own blocks and structuredContent, and a plain value.
UNENCODABLE = {
    "structured": lambda: ToolResult(content=[text("a")], structured={"ids": {1, 2}}),
    "block": lambda: ToolResult(content=[{"type": "text", "text": object()}]),
    "plain": lambda: {"ids": {1, 2}},
}


@tool
def unencodable(kind: str):
    """Return a value JSON cannot carry.

    Args:
        kind: Which one, a key of UNENCODABLE.
    """
    return UNENCODABLE[kind]()


def local_registry() -> Registry:
    """A registry holding only this module's test tools."""
    registry = Registry()
    for fn in (explode, refuse, describe, listing, blocks, liar, ratio, whoami, escape, unservable, unencodable):
        registry.add_function(fn)
    return registry


def call(rpc, name, arguments=None, request_id=5):
    """Call a tool and return the whole response."""
    params = {"name": name} if arguments is None else {"name": name, "arguments": arguments}
    return rpc.request("tools/call", params, request_id=request_id)


def assert_text_blocks(result):
    """content is a non-empty list of text blocks."""
    assert isinstance(result["content"], list) and result["content"]
    for block in result["content"]:
        assert block["type"] == "text" and isinstance(block["text"], str)


# the seed's tools
@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_add_returns_text_and_structured_result(make_rpc, version):
    response = call(make_rpc(version), "add", {"a": 2, "b": 3})
    assert response["id"] == 5
    result = response["result"]
    assert result["content"] == [{"type": "text", "text": "5"}]
    assert result["structuredContent"] == {"result": 5}
    assert result["isError"] is False


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
def test_structured_content_is_absent_before_2025_06_18(make_rpc, version):
    result = call(make_rpc(version), "add", {"a": 2, "b": 3})["result"]
    assert result["content"] == [{"type": "text", "text": "5"}]
    assert "structuredContent" not in result


def test_echo_returns_its_text(make_rpc):
    result = call(make_rpc("2025-06-18"), "echo", {"text": "héllo, wörld"})["result"]
    assert result["content"] == [{"type": "text", "text": "héllo, wörld"}]
    assert result["structuredContent"] == {"result": "héllo, wörld"}


def test_get_time_returns_an_iso_8601_utc_time(make_rpc):
    result = call(make_rpc("2025-06-18"), "get_time", {})["result"]
    assert_text_blocks(result)
    stamp = datetime.fromisoformat(result["content"][0]["text"])
    assert stamp.utcoffset().total_seconds() == 0
    assert result["structuredContent"] == {"result": result["content"][0]["text"]}


def test_get_time_accepts_missing_arguments(make_rpc):
    result = call(make_rpc("2025-06-18"), "get_time")["result"]
    assert result["isError"] is False
    assert_text_blocks(result)


# argument validation
@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
@pytest.mark.parametrize(
    "arguments",
    [{"a": "2", "b": 3}, {"a": 2}, {"a": 2, "b": 3, "c": 4}, {"a": 2.5, "b": 3}],
    ids=["wrong-type", "missing", "extra", "float"],
)
def test_schema_violation_is_invalid_params_up_to_2025_06_18(make_rpc, version, arguments):
    response = call(make_rpc(version), "add", arguments)
    assert "result" not in response
    assert response["id"] == 5
    assert response["error"]["code"] == -32602
    assert "add" in response["error"]["message"]
    assert response["error"]["data"]["errors"]


def test_schema_violation_is_an_error_result_on_2025_11_25(make_rpc):
    response = call(make_rpc("2025-11-25"), "add", {"a": "2", "b": 3})
    assert "error" not in response
    result = response["result"]
    assert result["isError"] is True
    assert_text_blocks(result)
    assert "/a" in result["content"][0]["text"]


def test_arguments_that_are_not_an_object_are_invalid_params(make_rpc):
    response = call(make_rpc("2025-06-18"), "echo", ["hi"])
    assert response["error"]["code"] == -32602


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_unknown_tool_is_invalid_params(make_rpc, version):
    response = call(make_rpc(version), "no_such_tool", {})
    assert response["error"]["code"] == -32602
    assert "no_such_tool" in response["error"]["message"]


def test_missing_tool_name_is_invalid_params(make_rpc):
    response = make_rpc("2025-06-18").request("tools/call", {"arguments": {}})
    assert response["error"]["code"] == -32602


# tools that fail, in a test-local registry
def test_a_tool_that_raises_gives_is_error_with_a_safe_message(make_server, make_rpc, mcp_log):
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    response = call(rpc, "explode", {})
    result = response["result"]
    assert result["isError"] is True
    assert_text_blocks(result)
    assert "explode" in result["content"][0]["text"]
    wire = str(response)
    assert SECRET not in wire and "RuntimeError" not in wire and "Traceback" not in wire
    # The detail goes to the log instead, under the correlation id the client sees.
    assert SECRET in mcp_log.text
    correlation_id = result["content"][0]["text"].rsplit(" ", 1)[-1].strip(")")
    assert correlation_id in mcp_log.text


@pytest.mark.parametrize("kind", ESCAPES)
def test_a_tool_that_lets_a_base_exception_escape_gives_is_error_with_a_correlation_id(make_server, make_rpc, mcp_log,
                                                                                      kind):
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    result = call(rpc, "escape", {"kind": kind})["result"]
    assert result["isError"] is True
    assert "failed with an internal error (correlation id" in result["content"][0]["text"]
    assert SECRET not in str(result)
    correlation_id = result["content"][0]["text"].rsplit(" ", 1)[-1].strip(")")
    assert correlation_id in mcp_log.text


def test_a_protocol_error_whose_data_is_not_json_goes_out_without_its_data(make_server, make_rpc, mcp_log):
    # It used to fail when the response was encoded: HTTP 500 with a null id, in place of the tool's own error.
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    response = call(rpc, "unservable", {}, request_id=8)
    assert response == {"jsonrpc": "2.0", "id": 8, "error": {"code": -32050, "message": "cannot serve this"}}
    assert "unservable raised ProtocolError with data JSON cannot carry" in mcp_log.text


@pytest.mark.parametrize("kind", UNENCODABLE)
def test_a_result_json_cannot_carry_is_an_error_result_with_a_correlation_id(make_server, make_rpc, mcp_log, kind):
    # A ToolResult's used to fail only when the response was encoded: HTTP 500 with a null id.
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    result = call(rpc, "unencodable", {"kind": kind}, request_id=7)["result"]
    assert result["isError"] is True
    assert "returned a value JSON cannot carry (correlation id" in result["content"][0]["text"]
    correlation_id = result["content"][0]["text"].rsplit(" ", 1)[-1].strip(")")
    assert correlation_id in mcp_log.text


def test_a_tool_error_message_reaches_the_client(make_server, make_rpc):
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    result = call(rpc, "refuse", {})["result"]
    assert result == {"content": [{"type": "text", "text": "the answer is no"}], "isError": True}


def test_a_dict_result_is_structured_content_as_it_is(make_server, make_rpc):
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    result = call(rpc, "describe", {})["result"]
    assert result["structuredContent"] == {"name": "flask", "stars": 3}
    assert result["content"][0]["type"] == "text"


def test_a_list_result_is_wrapped_so_structured_content_is_an_object(make_server, make_rpc):
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    assert call(rpc, "listing", {})["result"]["structuredContent"] == {"result": [1, 2]}


def test_a_tool_result_keeps_its_own_blocks(make_server, make_rpc):
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    result = call(rpc, "blocks", {})["result"]
    assert result["content"] == [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert result["structuredContent"] == {"count": 2}


def test_output_outside_the_output_schema_is_an_error_result(make_server, make_rpc):
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    result = call(rpc, "liar", {})["result"]
    assert result["isError"] is True
    assert "structuredContent" not in result


@pytest.mark.parametrize("numerator", [0.0, 1.0, -1.0])
def test_nan_or_infinity_from_a_float_tool_is_an_error_result_not_a_null(make_server, make_rpc, numerator):
    # JSON has no nan or infinity: sent, they would read as null, outside the tool's outputSchema.
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    result = call(rpc, "ratio", {"numerator": numerator, "denominator": 0.0})["result"]
    assert result["isError"] is True and "does not match its outputSchema" in result["content"][0]["text"]
    assert "structuredContent" not in result


def test_a_tool_with_ctx_receives_the_request_context(make_server, make_rpc):
    rpc = make_rpc("2025-06-18", on=make_server(registry=local_registry()))
    result = call(rpc, "whoami", {"who": "me"})["result"]
    assert result["content"][0]["text"] == f"me@{rpc.session.id}"

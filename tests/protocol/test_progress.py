"""notifications/progress: only for a progressToken, carrying it, strictly increasing; total and message optional."""

from __future__ import annotations

import math

import pytest

from flask_mcp_gevent.encoding import dumps
from mcp_tools import Registry, tool

STEPS = {
    "type": "object",
    "properties": {"steps": {"type": "array", "items": {"type": "array"}}},
    "required": ["steps"],
    "additionalProperties": False,
}


@tool(input_schema=STEPS)
def report(steps: list, ctx) -> str:
    """Report each [progress, total, message] step in order."""
    for progress, total, message in steps:
        ctx.progress(progress, total=total, message=message)
    return "done"


# What JSON cannot carry as a number (each would go out as null), then a good value after each.
NOT_NUMBERS = [(math.nan, None), (math.inf, None), (-math.inf, None), (1, math.nan), (1, math.inf), (True, None),
               ("2", None)]


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def report_not_numbers(ctx) -> str:
    """Report each of NOT_NUMBERS, then a value that increases on the last one sent."""
    for progress, total in NOT_NUMBERS:
        ctx.progress(progress, total=total)
    ctx.progress(0.5, total=1)
    return "done"


@pytest.fixture
def registry() -> Registry:
    """Only the progress-reporting tools."""
    registry = Registry()
    registry.add_function(report)
    registry.add_function(report_not_numbers)
    return registry


def call_with(rpc, steps, meta=None) -> list[dict]:
    """Call report with steps (and _meta if given); return the progress notifications it sent."""
    params = {"name": "report", "arguments": {"steps": steps}}
    if meta is not None:
        params["_meta"] = meta
    response = rpc.one(dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
    assert response["result"]["isError"] is False
    return [m for m in rpc.sent if m["method"] == "notifications/progress"]


@pytest.mark.parametrize(("token", "kind"), [(True, "a boolean"), (None, "null"), ({"a": 1}, "an object"),
                                           (["a"], "an array")])
@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
def test_a_progress_token_that_is_no_string_or_number_is_invalid_params(make_rpc, token, kind, version):
    rpc = make_rpc(version)
    response = rpc.request("tools/call", {"name": "report", "arguments": {"steps": [[1, None, None]]},
                                          "_meta": {"progressToken": token}})
    assert response["error"]["code"] == -32602 and response["id"] is not None
    assert '"_meta.progressToken" must be a string or a number, not ' + kind in response["error"]["message"]
    assert [m for m in rpc.sent if m.get("method") == "notifications/progress"] == []


@pytest.mark.parametrize("token", ["tok-1", 17, 2.5])
def test_progress_carries_the_clients_token_and_values(make_rpc, token):
    sent = call_with(make_rpc("2025-06-18"), [[0, 100, None], [50, 100, "half"], [100, 100, "done"]],
                     {"progressToken": token})
    assert sent == [
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 0,
                                                                          "total": 100}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 50,
                                                                          "total": 100, "message": "half"}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 100,
                                                                          "total": 100, "message": "done"}},
    ]


def test_total_and_message_are_optional(make_rpc):
    sent = call_with(make_rpc("2025-06-18"), [[0.5, None, None]], {"progressToken": "t"})
    assert sent[0]["params"] == {"progressToken": "t", "progress": 0.5}


def test_without_a_progress_token_nothing_is_sent(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert call_with(rpc, [[1, 2, None], [2, 2, None]]) == []
    assert call_with(rpc, [[1, 2, None]], {"other": "x"}) == []


def test_progress_that_does_not_increase_is_dropped(make_rpc):
    sent = call_with(make_rpc("2025-06-18"), [[1, None, None], [1, None, None], [3, None, None], [2, None, None],
                                              [4, None, None]], {"progressToken": "t"})
    assert [m["params"]["progress"] for m in sent] == [1, 3, 4]


def test_progress_or_a_total_that_is_not_a_finite_number_is_dropped(make_rpc, mcp_log):
    rpc = make_rpc("2025-06-18")
    response = rpc.request("tools/call", {"name": "report_not_numbers", "arguments": {},
                                          "_meta": {"progressToken": "t"}})
    assert response["result"]["isError"] is False
    sent = [m["params"] for m in rpc.sent if m["method"] == "notifications/progress"]
    assert sent == [{"progressToken": "t", "progress": 0.5, "total": 1}]
    assert "both must be finite numbers" in mcp_log.text


def test_each_request_keeps_its_own_progress(make_rpc):
    rpc = make_rpc("2025-06-18")
    first = call_with(rpc, [[5, None, None]], {"progressToken": "a"})
    rpc.sent.clear()
    # A new request starts again from nothing, even below the other request's last value.
    second = call_with(rpc, [[1, None, None]], {"progressToken": "b"})
    assert [m["params"] for m in first] == [{"progressToken": "a", "progress": 5}]
    assert [m["params"] for m in second] == [{"progressToken": "b", "progress": 1}]

"""results: a tool's return value shaped into a CallToolResult for the session's version."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.protocol.tools import error_result, shape_tool_result, to_text
from mcp_tools import ToolResult, image, text

NEW, OLD = "2025-06-18", "2025-03-26"


@pytest.mark.parametrize(
    "value, rendered",
    [("plain", "plain"), ("", ""), (5, "5"), (2.5, "2.5"), (True, "true"), (None, "null"),
     ([1, "a"], '[1,"a"]'), ({"k": "v"}, '{"k":"v"}')],
)
def test_to_text_renders_strings_as_is_and_the_rest_as_json(value, rendered):
    assert to_text(value) == rendered


@pytest.mark.parametrize(
    "value, structured",
    [(5, {"result": 5}), ("hi", {"result": "hi"}), ([1, 2], {"result": [1, 2]}), (None, {"result": None}),
     ({"a": 1}, {"a": 1})],
)
def test_structured_content_is_always_an_object(value, structured):
    result = shape_tool_result(value, NEW)
    assert result["structuredContent"] == structured
    assert result["content"] == [{"type": "text", "text": to_text(value)}]
    assert result["isError"] is False


@pytest.mark.parametrize("version", [None, "2024-11-05", OLD])
def test_structured_content_is_left_out_before_2025_06_18(version):
    result = shape_tool_result({"a": 1}, version)
    assert "structuredContent" not in result
    assert result["content"] == [{"type": "text", "text": '{"a":1}'}]


def test_a_tool_result_keeps_its_blocks_and_error_flag():
    value = ToolResult(content=[text("a"), image(b"\x89PNG", "image/png")], structured={"n": 1}, is_error=True)
    result = shape_tool_result(value, NEW)
    assert result["content"] == [{"type": "text", "text": "a"},
                                 {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}]
    assert result["isError"] is True
    assert result["structuredContent"] == {"n": 1}


def test_a_tool_result_without_structured_content_has_none():
    assert "structuredContent" not in shape_tool_result(ToolResult(content=[text("a")]), NEW)


def test_a_tool_results_structured_content_is_dropped_before_2025_06_18():
    assert "structuredContent" not in shape_tool_result(ToolResult(content=[text("a")], structured={"n": 1}), OLD)


def test_error_result_is_one_text_block_flagged_as_error():
    assert error_result("nope") == {"content": [{"type": "text", "text": "nope"}], "isError": True}

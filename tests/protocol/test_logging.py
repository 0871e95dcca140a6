"""logging/setLevel and notifications/message: the eight levels, bad levels, and filtering by the session's level."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.protocol.request_context import LOG_LEVELS
from mcp_tools import Registry, tool

ENTRIES = {
    "type": "object",
    "properties": {"levels": {"type": "array", "items": {"type": "string"}}},
    "required": ["levels"],
    "additionalProperties": False,
}


@tool(input_schema=ENTRIES)
def log_each(levels: list, ctx) -> int:
    """Log one message at each level given, in order."""
    for level in levels:
        ctx.log(level, {"at": level}, logger="test")
    return len(levels)


@tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
def log_plain(ctx) -> str:
    """Log a string without a logger name."""
    ctx.log("notice", "plain")
    return "ok"


@pytest.fixture
def registry() -> Registry:
    """Only this module's logging tools."""
    registry = Registry()
    registry.add_function(log_each)
    registry.add_function(log_plain)
    return registry


def set_level(rpc, level):
    """The response to logging/setLevel."""
    return rpc.request("logging/setLevel", {"level": level}, request_id=8)


def logged_levels(rpc, levels=LOG_LEVELS) -> list[str]:
    """Call log_each with levels and return the levels of the notifications/message it sent."""
    rpc.sent.clear()
    assert rpc.request("tools/call", {"name": "log_each", "arguments": {"levels": list(levels)}})["result"]
    return [m["params"]["level"] for m in rpc.sent if m["method"] == "notifications/message"]


def test_the_eight_rfc_5424_levels_are_the_mcp_levels():
    assert LOG_LEVELS == ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@pytest.mark.parametrize("level", LOG_LEVELS)
def test_set_level_accepts_each_level_and_answers_empty(make_rpc, level):
    rpc = make_rpc("2025-06-18")
    assert set_level(rpc, level) == {"jsonrpc": "2.0", "id": 8, "result": {}}
    assert rpc.session.log_level == level


@pytest.mark.parametrize("level", ["WARNING", "warn", "fatal", "", 3, None, ["info"]])
def test_a_bad_level_is_invalid_params_and_keeps_the_old_level(make_rpc, level):
    rpc = make_rpc("2025-06-18")
    set_level(rpc, "error")
    response = set_level(rpc, level)
    assert response["error"]["code"] == -32602
    assert response["error"]["data"] == {"level": level}
    assert "debug, info, notice, warning, error, critical, alert, emergency" in response["error"]["message"]
    assert rpc.session.log_level == "error"


def test_set_level_without_a_level_is_invalid_params(make_rpc):
    assert make_rpc("2025-06-18").request("logging/setLevel", {})["error"]["code"] == -32602


def test_set_level_before_initialize_is_refused(rpc):
    assert set_level(rpc, "info")["error"]["code"] == -32600


def test_without_set_level_every_level_is_sent(make_rpc):
    assert logged_levels(make_rpc("2025-06-18")) == list(LOG_LEVELS)


@pytest.mark.parametrize("threshold", LOG_LEVELS)
def test_messages_below_the_sessions_level_are_not_sent(make_rpc, threshold):
    rpc = make_rpc("2025-06-18")
    set_level(rpc, threshold)
    assert logged_levels(rpc) == list(LOG_LEVELS[LOG_LEVELS.index(threshold):])


def test_lowering_the_level_again_lets_messages_through(make_rpc):
    rpc = make_rpc("2025-06-18")
    set_level(rpc, "emergency")
    assert logged_levels(rpc, ["info", "warning"]) == []
    set_level(rpc, "debug")
    assert logged_levels(rpc, ["info", "warning"]) == ["info", "warning"]


def test_the_level_belongs_to_the_session(make_rpc):
    quiet, chatty = make_rpc("2025-06-18"), make_rpc("2025-06-18")
    set_level(quiet, "critical")
    assert logged_levels(quiet, ["info"]) == []
    assert logged_levels(chatty, ["info"]) == ["info"]


def test_a_log_message_has_level_logger_and_data(make_rpc):
    rpc = make_rpc("2025-06-18")
    logged_levels(rpc, ["warning"])
    assert rpc.sent == [{"jsonrpc": "2.0", "method": "notifications/message",
                         "params": {"level": "warning", "data": {"at": "warning"}, "logger": "test"}}]


def test_a_log_message_without_a_logger_has_no_logger_field(make_rpc):
    rpc = make_rpc("2025-06-18")
    rpc.request("tools/call", {"name": "log_plain", "arguments": {}})
    assert rpc.sent == [{"jsonrpc": "2.0", "method": "notifications/message",
                         "params": {"level": "notice", "data": "plain"}}]


def test_a_tool_logging_at_an_unknown_level_fails_as_a_tool_error(make_rpc):
    rpc = make_rpc("2025-06-18")
    result = rpc.request("tools/call", {"name": "log_each", "arguments": {"levels": ["loud"]}})["result"]
    assert result["isError"] is True
    assert rpc.sent == []

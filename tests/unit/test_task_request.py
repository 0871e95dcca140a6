"""What a task keeps of its tools/call (tasks/request.py): capability names only, within a byte bound."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.encoding import loads
from flask_mcp_gevent.errors import RpcError
from flask_mcp_gevent.tasks.request import check_answer_bytes, kept_capabilities, task_request
from flask_mcp_gevent.tasks.shapes import TASKS_EXTENSION, declares_tasks

CAPABILITIES = {
    "elicitation": {"form": {"deep": "x" * 1000}, "url": {}},
    "sampling": {"tools": {}},
    "roots": {"listChanged": True},
    "extensions": {TASKS_EXTENSION: {"setting": ["y" * 1000]}},
    "experimental": {"blob": "z" * 100_000},
    "notAnObject": "ignored",
}


def test_kept_capabilities_are_each_capabilitys_name_and_its_members_names():
    assert kept_capabilities(CAPABILITIES) == {
        "elicitation": {"form": {}, "url": {}},
        "sampling": {"tools": {}},
        "roots": {"listChanged": {}},
        "extensions": {TASKS_EXTENSION: {}},
        "experimental": {"blob": {}},
    }
    assert declares_tasks(kept_capabilities(CAPABILITIES))


def test_kept_capabilities_of_something_not_an_object_are_empty():
    assert kept_capabilities(None) == {}
    assert kept_capabilities(["elicitation"]) == {}


def test_the_stored_request_holds_the_call_and_the_capability_names_only():
    stored = loads(task_request("slow", {"n": 1}, CAPABILITIES, "2026-07-28", {"round": 2}, limit=4096))
    assert stored == {"name": "slow", "arguments": {"n": 1}, "capabilities": kept_capabilities(CAPABILITIES),
                      "version": "2026-07-28", "state": {"round": 2}}


def test_a_request_over_the_bound_is_32602_naming_the_setting():
    with pytest.raises(RpcError) as refused:
        task_request("slow", {"text": "a" * 5000}, {}, "2026-07-28", None, limit=4096)
    assert refused.value.code == -32602
    assert "MCP_TASK_MAX_REQUEST_BYTES" in refused.value.message
    assert refused.value.data == {"tool": "slow"}


def test_answers_are_counted_in_utf8_bytes():
    check_answer_bytes({"a": '"' + "x" * 1000 + '"'}, limit=1024)
    with pytest.raises(RpcError) as refused:
        check_answer_bytes({"a": '"' + "é" * 1000 + '"'}, limit=1024)  # 1,000 characters, 2,002 bytes
    assert refused.value.code == -32602
    assert "MCP_TASK_MAX_RESULT_BYTES" in refused.value.message


def test_an_error_too_big_to_keep_is_cut_to_fit_the_bound_even_when_every_character_is_escaped():
    from flask_mcp_gevent.errors import RpcError
    from flask_mcp_gevent.tasks.runner import kept_error

    for text in ("é" * 5000, "\x01" * 5000):  # 2 bytes of UTF-8 each; 6 bytes of JSON each (\u0001)
        error, status_message = kept_error(RpcError(-32603, text, {"pad": "x" * 5000}), 1024)
        assert len(error.encode()) <= 1024
        assert status_message and text.startswith(status_message)

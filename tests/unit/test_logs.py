"""Logging: JSON lines when MCP_LOG_FORMAT=json, text otherwise, always on stderr, one handler."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest

from flask_mcp_gevent.logs import HANDLER_NAME, TEXT_FORMAT, JsonFormatter, TextFormatter, configure_logging


def record(message: str, *args, exc_info=None) -> logging.LogRecord:
    """A record as the mcp.rpc logger would make it."""
    return logging.getLogger("mcp.rpc").makeRecord("mcp.rpc", logging.INFO, __file__, 1, message, args, exc_info)


def test_json_formatter_writes_one_parseable_object_with_the_fields_operators_filter_on():
    line = JsonFormatter().format(record("rpc method=%s status=%s", "tools/call", "ok"))
    entry = json.loads(line)
    assert "\n" not in line
    assert entry["level"] == "info"
    assert entry["logger"] == "mcp.rpc"
    assert entry["message"] == "rpc method=tools/call status=ok"
    assert isinstance(entry["pid"], int)
    assert entry["ts"].endswith("Z") and "T" in entry["ts"]


def test_json_formatter_keeps_a_multiline_exception_inside_one_line():
    try:
        raise ValueError("boom")
    except ValueError:
        line = JsonFormatter().format(record("handler failed", exc_info=sys.exc_info()))
    assert "\n" not in line
    entry = json.loads(line)
    assert "ValueError: boom" in entry["exception"]


def test_json_formatter_keeps_non_ascii_text_readable():
    entry = json.loads(JsonFormatter().format(record("héllo %s", "wörld")))
    assert entry["message"] == "héllo wörld"


@pytest.fixture
def restore_mcp_logger():
    """Put the mcp logger back as the test found it."""
    logger = logging.getLogger("mcp")
    saved = (logger.level, list(logger.handlers), logger.propagate)
    yield
    logger.setLevel(saved[0])
    logger.handlers[:] = saved[1]
    logger.propagate = saved[2]


def test_configure_logging_json_sends_json_lines_to_stderr(restore_mcp_logger, monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    configure_logging("INFO", "json")
    logging.getLogger("mcp.rpc").info("rpc method=%s", "ping")
    logging.getLogger("mcp.rpc").debug("not at INFO")
    lines = stream.getvalue().splitlines()
    assert [json.loads(line)["message"] for line in lines] == ["rpc method=ping"]


def test_configure_logging_twice_keeps_one_handler(restore_mcp_logger):
    configure_logging("INFO", "text")
    configure_logging("DEBUG", "json")
    handlers = [h for h in logging.getLogger("mcp").handlers if h.get_name() == HANDLER_NAME]
    assert len(handlers) == 1
    assert isinstance(handlers[0].formatter, JsonFormatter)
    assert logging.getLogger("mcp").level == logging.DEBUG


def test_configure_logging_text_is_not_json(restore_mcp_logger, monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    configure_logging("INFO", "text")
    logging.getLogger("mcp.rpc").info("plain line")
    assert stream.getvalue().rstrip().endswith("INFO mcp.rpc plain line")


def test_the_text_time_stamp_is_loggings_own_across_second_boundaries():
    ours, standard = TextFormatter(TEXT_FORMAT), logging.Formatter(TEXT_FORMAT)
    for created in (1700000000.123, 1700000000.999, 1700000001.0005, 1700000000.5, 1800000000.25):
        record = logging.LogRecord("mcp.rpc", logging.INFO, "", 0, "line", (), None)
        record.created, record.msecs = created, int((created - int(created)) * 1000)
        assert ours.formatTime(record) == standard.formatTime(record)
        assert ours.formatTime(record, "%H:%M") == standard.formatTime(record, "%H:%M")

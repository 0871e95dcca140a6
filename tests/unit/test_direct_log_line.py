"""log_line: the per-request line written without a LogRecord gives logging's own text, and steps aside for others."""

from __future__ import annotations

import io
import logging
import sys
import time

import pytest

from flask_mcp_gevent.logs import (
    TEXT_FORMAT,
    JsonFormatter,
    StderrHandler,
    TextFormatter,
    configure_logging,
    log_line,
    log_moment,
    loggable,
)

SESSION_ID = "0123456789abcdef0123456789abcdef"
# What a client can put in a line: a session id, a % sign, quotes, a backslash, non-ASCII, a forged newline.
ODD = '100%s "quoted" back\\slash'
MESSAGES = (
    "rpc method=tools/call id=7 session=- status=ok duration_ms=1.23",
    f"rpc method={loggable('x' + SESSION_ID)} id={loggable(SESSION_ID)} session=01234567 status=ok duration_ms=0.50",
    f"rpc method={loggable(ODD)} id={loggable('wörld')} status=error:-32601",
    f"rpc method={loggable('evil' + chr(10) + 'FORGED-LINE')} id=1 session=- status=ok duration_ms=0.01",
)
MOMENTS = (1700000000.123, 1700000000.999, 1700000001.0005, 1800000000.25)


def record_at(created: float, message: str) -> logging.LogRecord:
    """The record logging makes for logger mcp.rpc's info(message) at that moment."""
    record = logging.LogRecord("mcp.rpc", logging.INFO, "", 0, message, None, None)
    record.created, record.msecs = created, int((created - int(created)) * 1000) + 0.0
    return record


@pytest.mark.parametrize("formatter", [TextFormatter(TEXT_FORMAT), JsonFormatter(), TextFormatter("%(message)s")],
                         ids=["text", "json", "another text format"])
def test_a_rendered_line_is_the_formatted_record_to_the_character(formatter):
    for created in MOMENTS:
        for message in MESSAGES:
            record = record_at(created, message)
            assert formatter.render(created, record.msecs, logging.INFO, "mcp.rpc", message) == formatter.format(
                record)


@pytest.fixture
def restore_mcp_logger():
    """Put the mcp logger back as the test found it."""
    logger = logging.getLogger("mcp")
    saved = (logger.level, list(logger.handlers), logger.propagate)
    yield
    logger.setLevel(saved[0])
    logger.handlers[:] = saved[1]
    logger.propagate = saved[2]


def configure_onto_a_string(monkeypatch, level: str, fmt: str) -> io.StringIO:
    """configure_logging with stderr a StringIO (set in the test: pytest puts its own stderr back before it).

    pytest attaches its capture handlers to every logger that does not propagate, `mcp` among them once an
    earlier test configured it; they are taken off, so `mcp` has the one handler it has in a server.
    """
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    configure_logging(level, fmt)
    logger = logging.getLogger("mcp")
    logger.handlers[:] = [handler for handler in logger.handlers if isinstance(handler, StderrHandler)]
    return stream


def both_ways(stream: io.StringIO, monkeypatch, message: str) -> tuple[str, str]:
    """The line logging writes for info(message) and the line log_line writes, at one frozen moment."""
    monkeypatch.setattr(time, "time", lambda: 1700000000.123)
    monkeypatch.setattr(time, "time_ns", lambda: 1700000000_123_000_000)
    rpc = logging.getLogger("mcp.rpc")
    rpc.info(message)
    log_line(rpc, logging.INFO, message)
    first, second = stream.getvalue().splitlines()
    return first, second


@pytest.mark.parametrize("ns", [1700000000_123_000_000, 1677903920_999_999_900, 1700000000_000_000_001,
                                1800000000_250_000_000, 1700000000_999_000_000])
def test_the_moment_of_a_line_is_the_one_this_pythons_log_record_takes(monkeypatch, ns):
    # 3.11 and 3.12 take the milliseconds from time.time()'s float, 3.13 from time.time_ns(): .123 s is 122 ms in one
    # and 123 ms in the other, and a float that rounds up into the next second is 0 ms in 3.13.
    monkeypatch.setattr(time, "time", lambda: ns / 1e9)
    monkeypatch.setattr(time, "time_ns", lambda: ns)
    record = logging.LogRecord("mcp.rpc", logging.INFO, "", 0, "m", None, None)
    assert log_moment() == (record.created, record.msecs)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_log_line_writes_what_logging_writes_without_making_a_record(restore_mcp_logger, monkeypatch, fmt):
    stderr = configure_onto_a_string(monkeypatch, "INFO", fmt)
    for message in MESSAGES:
        stderr.seek(0)
        stderr.truncate()
        through_logging, direct = both_ways(stderr, monkeypatch, message)
        assert direct == through_logging
        assert SESSION_ID not in direct and "\n" not in direct
    monkeypatch.setattr(logging.Logger, "makeRecord", lambda *a, **k: pytest.fail("log_line made a LogRecord"))
    log_line(logging.getLogger("mcp.rpc"), logging.INFO, "direct")
    assert stderr.getvalue().rstrip().endswith("direct") or '"message": "direct"' in stderr.getvalue()


def test_log_line_keeps_the_level_filter(restore_mcp_logger, monkeypatch):
    stderr = configure_onto_a_string(monkeypatch, "WARNING", "text")
    log_line(logging.getLogger("mcp.rpc"), logging.INFO, "not at WARNING")
    assert stderr.getvalue() == ""


class Collector(logging.Handler):
    """Keep the messages it handles."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the message."""
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("where", ["mcp", "mcp.rpc"])
def test_another_handler_on_the_way_gets_the_record_as_logging_gives_it(restore_mcp_logger, monkeypatch, where):
    stderr = configure_onto_a_string(monkeypatch, "INFO", "text")
    collector = Collector()
    logging.getLogger(where).addHandler(collector)
    try:
        log_line(logging.getLogger("mcp.rpc"), logging.INFO, "rpc method=100% sure")
    finally:
        logging.getLogger(where).removeHandler(collector)
    assert collector.messages == ["rpc method=100% sure"]
    assert stderr.getvalue().rstrip().endswith("INFO mcp.rpc rpc method=100% sure")


def test_a_write_that_fails_is_reported_as_logging_reports_it(restore_mcp_logger, monkeypatch):
    configure_onto_a_string(monkeypatch, "INFO", "text")
    [handler] = [h for h in logging.getLogger("mcp").handlers if isinstance(h, StderrHandler)]
    reported: list[logging.LogRecord] = []
    monkeypatch.setattr(handler, "handleError", reported.append)
    monkeypatch.setattr(handler, "stream", None)  # writing to it raises AttributeError
    log_line(logging.getLogger("mcp.rpc"), logging.INFO, "lost")
    [record] = reported
    assert record.getMessage() == "lost" and record.name == "mcp.rpc"

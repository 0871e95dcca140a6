"""What reaches a log line: client values escaped, session ids cut to 8 characters, greenlet failures logged."""

from __future__ import annotations

import logging
import sys

import gevent

from flask_mcp_gevent.logs import (
    JsonFormatter,
    TextFormatter,
    configure_logging,
    log_greenlet_failure,
    loggable,
    shorten_session_ids,
)

SESSION_ID = "0123456789abcdef0123456789abcdef"


def test_loggable_escapes_newlines_and_nul_and_cuts_long_values():
    assert loggable("/mcp\nFORGED") == "/mcp\\nFORGED"
    assert loggable("a\x00b") == "a\\x00b"
    assert loggable("x" * 500).endswith("...") and len(loggable("x" * 500)) == 123
    assert loggable(7) == "7"


def test_session_ids_are_cut_to_8_characters_but_other_hex_is_left_alone():
    assert shorten_session_ids(f"session {SESSION_ID} closed") == "session 01234567... closed"
    sha256 = "ab" * 32
    assert shorten_session_ids(sha256) == sha256


def record(message: str, *args, exc_info=None) -> logging.LogRecord:
    """A record of the mcp.test logger."""
    return logging.getLogger("mcp.test").makeRecord("mcp.test", logging.ERROR, __file__, 1, message, args, exc_info)


def test_both_formats_cut_session_ids_in_messages_and_tracebacks():
    try:
        raise KeyError(SESSION_ID)
    except KeyError:
        failing = record("lost %s", SESSION_ID, exc_info=sys.exc_info())
    for formatter in (TextFormatter("%(message)s"), JsonFormatter()):
        line = formatter.format(failing)
        assert SESSION_ID not in line and "01234567..." in line


class Collector(logging.Handler):
    """Keep the records it handles."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the record."""
        self.records.append(record)


def test_configure_logging_sends_greenlet_failures_to_the_mcp_logger():
    configure_logging("INFO", "text")
    assert gevent.get_hub().print_exception is log_greenlet_failure
    collector = Collector()
    logger = logging.getLogger("mcp.greenlet")
    logger.addHandler(collector)
    try:
        gevent.spawn(lambda session_id: 1 / 0, SESSION_ID).join(5)
    finally:
        logger.removeHandler(collector)
    [entry] = collector.records
    assert "failed with ZeroDivisionError" in entry.getMessage()
    assert SESSION_ID not in entry.getMessage()
    assert entry.exc_info[0] is ZeroDivisionError

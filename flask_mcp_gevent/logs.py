"""Logging to stderr only (stdout is reserved for stdio JSON-RPC), as text or JSON lines.

Client-chosen values go through `loggable` before they reach a line, session ids are
cut to their first 8 characters in every line, and greenlets that die of an exception
are logged here too, instead of by gevent's own plain-text printer.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from typing import Any

import gevent

__all__ = ["TEXT_FORMAT", "JsonFormatter", "TextFormatter", "configure_logging", "loggable", "shorten_session_ids"]

HANDLER_NAME = "mcp-stderr"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# Client-chosen values (method names, ids, paths) are cut to this length in log lines.
MAX_LOGGED_CHARS = 120
# A session id is 32 hex characters; a line keeps its first 8, enough to follow one session through the log.
SESSION_ID = re.compile(r"(?<![0-9a-fA-F])([0-9a-f]{8})[0-9a-f]{24}(?![0-9a-fA-F])")
greenlet_log = logging.getLogger("mcp.greenlet")


def loggable(value: Any) -> str:
    """Render a client-chosen value for a log line: short, on one line, control characters escaped."""
    text = value if isinstance(value, str) else repr(value)
    if not text.isprintable():
        text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= MAX_LOGGED_CHARS else text[:MAX_LOGGED_CHARS] + "..."


def shorten_session_ids(text: str) -> str:
    """Cut every session id in text to its first 8 characters (tracebacks and greenlet names included)."""
    # Most lines hold none: searching is cheaper than substituting nothing.
    return SESSION_ID.sub(r"\1...", text) if SESSION_ID.search(text) else text


class TextFormatter(logging.Formatter):
    """The text line, with session ids cut short."""

    _second: int | None = None
    _second_text = ""

    def format(self, record: logging.LogRecord) -> str:
        """Render a record as text."""
        return shorten_session_ids(super().format(record))

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 (logging's name)
        """logging's own time stamp, with the date and time worked out once a second rather than once a line."""
        if datefmt is not None:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second:
            self._second_text = time.strftime(self.default_time_format, self.converter(record.created))
            self._second = second
        if not self.default_msec_format:
            # As logging's own formatTime does when a subclass clears the milliseconds format.
            return self._second_text
        return self.default_msec_format % (self._second_text, record.msecs)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, pid, message, and the exception if any."""

    def format(self, record: logging.LogRecord) -> str:
        """Render a record as a JSON line."""
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return shorten_session_ids(json.dumps(entry, ensure_ascii=False))


def log_greenlet_failure(context: Any, kind: type, value: BaseException | None, tb: Any) -> None:
    """Log an exception that ended a greenlet (gevent's hub calls this in place of its printer)."""
    # Only the greenlet's name: gevent's own printer shows its arguments, session ids among them.
    name = getattr(context, "name", None) or type(context).__name__
    greenlet_log.error("greenlet %s failed with %s", loggable(name), getattr(kind, "__name__", "an exception"),
                       exc_info=(kind, value, tb) if value is not None else None)


def configure_logging(level: str = "INFO", fmt: str = "text") -> logging.Logger:
    """Send the `mcp` loggers to stderr at level, greenlet failures included; calling again replaces the handler."""
    # No format here names the thread, and under gevent asking for it makes a dummy Thread for every
    # greenlet that logs, which costs more than the rest of the one line each request gets.
    logging.logThreads = False
    # No format names the caller's file or line either: finding them walks the stack on every line (the
    # logging HOWTO's own advice, "Optimization").
    logging._srcfile = None
    logger = logging.getLogger("mcp")
    logger.setLevel(level.upper())
    logger.propagate = False
    for handler in list(logger.handlers):
        if handler.get_name() == HANDLER_NAME:
            logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter(TEXT_FORMAT))
    logger.addHandler(handler)
    # gevent's hub lets its instance override how a failure is printed; SYSTEM_ERRORs still end the loop after.
    gevent.get_hub().print_exception = log_greenlet_failure
    return logger

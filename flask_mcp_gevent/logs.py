"""Logging to stderr only (stdout is reserved for stdio JSON-RPC), as text or JSON lines.

Client-chosen values go through `loggable` before they reach a line, session ids are
cut to their first 8 characters in every line, and greenlets that die of an exception
are logged here too, instead of by gevent's own plain-text printer. `log_line` writes a
finished message (the one line each request gets) straight to the stderr handler when no
other handler would see it: the same text, without a LogRecord.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from typing import Any, cast

import gevent

__all__ = ["TEXT_FORMAT", "JsonFormatter", "StderrHandler", "TextFormatter", "configure_logging", "log_line",
           "loggable", "shorten_session_ids"]

HANDLER_NAME = "mcp-stderr"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
# Client-chosen values (method names, ids, paths) are cut to this length in log lines.
MAX_LOGGED_CHARS = 120
# A session id is 32 hex characters; a line keeps its first 8, enough to follow one session through the log.
SESSION_ID = re.compile(r"(?<![0-9a-fA-F])([0-9a-f]{8})[0-9a-f]{24}(?![0-9a-fA-F])")
# Any text holding a session id holds 32 hex characters in a row; this finds that half again as fast.
HEX_RUN = re.compile(r"[0-9a-f]{32}")
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
    return SESSION_ID.sub(r"\1...", text) if HEX_RUN.search(text) else text


def log_moment() -> tuple[float, float]:
    """Now as the running Python's LogRecord takes it: its created time and its whole milliseconds."""
    if sys.version_info >= (3, 13):
        # 3.13 reads the clock in nanoseconds and takes the milliseconds from them, not from the float.
        ns = time.time_ns()
        created, msecs = ns / 1e9, (ns % 1_000_000_000) // 1_000_000 + 0.0
        if msecs == 999.0 and int(created) != ns // 1_000_000_000:
            msecs = 0.0  # the float rounded up into the next second
        return created, msecs
    created = time.time()
    return created, int((created - int(created)) * 1000) + 0.0


def record_of(created: float, msecs: float, level: int, name: str, message: str) -> logging.LogRecord:
    """A LogRecord of a finished message, as logging would have made it at that moment."""
    record = logging.LogRecord(name, level, "", 0, message, None, None)
    record.created, record.msecs = created, msecs
    return record


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
        return self.stamp(record.created, record.msecs)

    def stamp(self, created: float, msecs: float) -> str:
        """The default time stamp of a moment (`2026-12-07 00:29:37,100`)."""
        second = int(created)
        if second != self._second:
            self._second_text = time.strftime(self.default_time_format, self.converter(created))
            self._second = second
        if not self.default_msec_format:
            # As logging's own formatTime does when a subclass clears the milliseconds format.
            return self._second_text
        return self.default_msec_format % (self._second_text, msecs)

    def render(self, created: float, msecs: float, level: int, name: str, message: str) -> str:
        """The text format(record) gives a record of this finished message, without making the record."""
        if self._fmt != TEXT_FORMAT or self.datefmt is not None:
            return self.format(record_of(created, msecs, level, name, message))
        stamp = self.stamp(created, msecs)
        # The prefix holds no session id (a time stamp, a level, our logger's name): only the message is searched.
        return f"{stamp} {logging.getLevelName(level)} {name} {shorten_session_ids(message)}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, pid, message, and the exception if any."""

    def format(self, record: logging.LogRecord) -> str:
        """Render a record as a JSON line."""
        entry = self.entry(record.created, record.msecs, record.levelname, record.name, record.process,
                           record.getMessage())
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return shorten_session_ids(json.dumps(entry, ensure_ascii=False))

    @staticmethod
    def entry(created: float, msecs: float, level_name: str, name: str, pid: int | None,
              message: str) -> dict[str, Any]:
        """The line's fields, exception aside."""
        return {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(msecs):03d}Z",
            "level": level_name.lower(),
            "logger": name,
            "pid": pid,
            "message": message,
        }

    def render(self, created: float, msecs: float, level: int, name: str, message: str) -> str:
        """The line format(record) gives a record of this finished message, without making the record."""
        pid = os.getpid() if logging.logProcesses else None
        # Cut in the message alone, before JSON escapes it: the other fields hold no session id, and escaping
        # puts a backslash only before characters that are not hex, so it neither makes nor splits an id.
        entry = self.entry(created, msecs, logging.getLevelName(level), name, pid,
                           shorten_session_ids(message))
        return json.dumps(entry, ensure_ascii=False)


class StderrHandler(logging.StreamHandler):
    """The `mcp` loggers' one handler: logging's StreamHandler, which can also write a line made without a record."""

    def write_line(self, level: int, name: str, message: str) -> None:
        """Write a finished message of logger name at level, formatted as emit would, under the handler's lock."""
        created, msecs = log_moment()
        try:
            text = cast(TextFormatter | JsonFormatter, self.formatter).render(created, msecs, level, name, message)
            with self.lock:  # type: ignore[union-attr]  # createLock made it
                self.stream.write(text + self.terminator)
                self.stream.flush()
        except Exception:
            self.handleError(record_of(created, msecs, level, name, message))


def sole_handler(logger: logging.Logger, level: int) -> StderrHandler | None:
    """The stderr handler when a record of logger (a child of `mcp`) at level would reach it and nothing else."""
    if logger.handlers or logger.filters or not logger.propagate or not logger.isEnabledFor(level):
        return None
    parent = logger.parent
    if parent is None or parent.propagate or len(parent.handlers) != 1:
        return None
    handler = parent.handlers[0]
    if type(handler) is not StderrHandler or handler.filters or level < handler.level:
        return None
    if not isinstance(handler.formatter, TextFormatter | JsonFormatter):
        return None
    return handler


def log_line(logger: logging.Logger, level: int, message: str) -> None:
    """Log a finished message (every client-chosen part through loggable) as logger.log(level, message) would.

    When only the stderr handler would see it (caplog or another handler attached takes logging's own way), the
    line is formatted and written directly: the same text, level filtering and escaping, no LogRecord, no
    lookup of handlers up the tree. This is the per-request line, a tenth of a call's CPU through logging.
    """
    handler = sole_handler(logger, level)
    if handler is None:
        logger.log(level, message)  # no arguments: a % in message stays as it is
    else:
        handler.write_line(level, logger.name, message)


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
    handler = StderrHandler(sys.stderr)
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter(TEXT_FORMAT))
    logger.addHandler(handler)
    # gevent's hub lets its instance override how a failure is printed; SYSTEM_ERRORs still end the loop after.
    gevent.get_hub().print_exception = log_greenlet_failure
    return logger

"""Logging to stderr only (stdout is reserved for stdio JSON-RPC), as text or JSON lines."""

from __future__ import annotations

import json
import logging
import sys
import time

__all__ = ["JsonFormatter", "configure_logging"]

HANDLER_NAME = "mcp-stderr"


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
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str = "INFO", fmt: str = "text") -> logging.Logger:
    """Send the `mcp` loggers to stderr at level; calling again replaces the handler."""
    # No format here names the thread, and under gevent asking for it makes a dummy Thread for every
    # greenlet that logs, which costs more than the rest of the one line each request gets.
    logging.logThreads = False
    logger = logging.getLogger("mcp")
    logger.setLevel(level.upper())
    logger.propagate = False
    for handler in list(logger.handlers):
        if handler.get_name() == HANDLER_NAME:
            logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(HANDLER_NAME)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    logger.addHandler(handler)
    return logger

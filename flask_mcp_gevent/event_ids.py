"""Event ids of a session's event log, and the log line for a stream that resumes past what the log still holds.

An event id is "<position>" on a session's own stream and "<position>/<stream>" on a request's stream, so a
Last-Event-ID alone says which stream to resume.
"""

from __future__ import annotations

import logging

from flask_mcp_gevent.metrics import instruments

__all__ = ["join_event_id", "report_replay_gap", "split_event_id"]

log = logging.getLogger("mcp.store")

STREAM_SEPARATOR = "/"
# Ids are the client's: at most this much of one goes into a log line, escaped by repr().
MAX_LOGGED_ID_CHARS = 40


def join_event_id(position: str, stream: str | None) -> str:
    """Build the event id of an event at position on stream (None: the session's own stream)."""
    return position if stream is None else f"{position}{STREAM_SEPARATOR}{stream}"


def split_event_id(event_id: str | None) -> tuple[str | None, str | None]:
    """Split an event id into its position and its stream (None: the session's own stream)."""
    if event_id is None:
        return None, None
    position, _, stream = event_id.partition(STREAM_SEPARATOR)
    return position, (stream or None)


def report_replay_gap(session_id: str, after: str) -> None:
    """Log and count a stream that resumes after an event its replay log no longer holds."""
    instruments().replay_gap()
    log.warning("stream of session %s resumes after event %s, which its replay log has dropped: events published "
                "since may be lost (raise MCP_REPLAY_MAX or MCP_REPLAY_MAX_BYTES)", session_id[:8],
                repr(after)[:MAX_LOGGED_ID_CHARS])

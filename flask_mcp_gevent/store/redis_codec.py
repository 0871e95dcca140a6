"""How the Redis store writes values into Redis and reads them back: sessions, replay entries, event ids, TTLs."""

from __future__ import annotations

import re
from typing import Any

from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.session import Session

# Stored as JSON text inside the session's JSON, so the update script's cjson passes them through unchanged.
CLIENT_CHOSEN_FIELDS = ("client_info", "client_capabilities")
EVENT_POSITION = re.compile(r"^[0-9]{1,20}(-[0-9]{1,20})?$")
REPLAY_NOTHING = "$"


def replay_position(position: str | None) -> str:
    """Where a resumed stream's replay starts: after a Redis stream id ("0" is before everything)."""
    if position is None or not EVENT_POSITION.match(position):
        return REPLAY_NOTHING  # an unreadable id replays nothing rather than everything
    return position if "-" in position else position + "-0"


def entries_of(raw: list[Any], stream: str | None) -> list[tuple[str, bytes]]:
    """The (id, json) of replay entries that belong to one stream (None: the session's own)."""
    wanted = b"" if stream is None else stream.encode()
    entries = []
    for event_id, raw_fields in raw:
        fields = dict(field_pairs(raw_fields))
        if fields.get(b"s", b"") == wanted:
            entries.append((event_id.decode(), fields[b"d"]))
    return entries


def field_pairs(reply: Any) -> Any:
    """(field, value) pairs of a hash or stream entry: redis-py's dict, or the multiplexer's and Lua's flat list."""
    return reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2], strict=True)


def session_json(session: Session) -> bytes:
    """Encode a session for Redis, the fields the client chose as JSON text (see UPDATE_SCRIPT)."""
    data = session.to_dict()
    for name in CLIENT_CHOSEN_FIELDS:
        data[name] = dumps(data[name]).decode()
    return dumps(data)


def session_from_json(data: bytes) -> Session:
    """Decode a session stored by session_json (or by an older version, with those fields as JSON)."""
    fields = loads(data)
    for name in CLIENT_CHOSEN_FIELDS:
        if isinstance(fields.get(name), str):
            fields[name] = loads(fields[name])
    return Session.from_dict(fields)


def event_order(event_id: str) -> tuple[int, int]:
    """Sort key of a Redis stream id ("<ms>-<seq>")."""
    ms, _, seq = event_id.partition("-")
    return int(ms), int(seq)


def milliseconds(seconds: float) -> int:
    """Seconds as whole milliseconds, at least 1."""
    return max(1, int(seconds * 1000))

"""Tools the store-bound tests drive: what a session's replay log holds, and filling the record of consumed requests.

Loaded with MCP_PLUGINS=tests.e2e.plugins.replay_tools. They read the store itself (the in-memory store's session
slots, or the session's Redis Stream; the fleet bus's use_once), so a test sees what is really kept, not a counter.
"""

from __future__ import annotations

import secrets

from flask_mcp_gevent.conditions import CapacityError
from flask_mcp_gevent.encoding import loads
from flask_mcp_gevent.store.redis_keys import session_keys
from mcp_tools import tool
from tests.support.store_seam import server_store


def replay_entries(store, session_id: str) -> list[bytes]:
    """The JSON of every entry the session's replay log keeps, oldest first."""
    slots = getattr(store.sessions, "slots", None)
    if slots is not None:
        slot = slots.get(session_id)
        return [] if slot is None else [data for _, data, _ in slot.replay]
    return [fields[b"d"] for _, fields in store.link.client.xrange(session_keys(session_id).replay)]


@tool(input_schema={
    "type": "object",
    "properties": {"session": {"type": "string", "pattern": "^[0-9a-f]{32}$",
                               "description": "The session whose replay log to read."}},
    "required": ["session"],
    "additionalProperties": False,
})
def replay_kept(session: str) -> dict:
    """Report the ids of the answers a session's replay log keeps, and the bytes of JSON it holds."""
    entries = replay_entries(server_store(), session)
    return {"ids": [loads(data).get("id") for data in entries], "bytes": sum(len(data) for data in entries)}


@tool(input_schema={
    "type": "object",
    "properties": {"count": {"type": "integer", "minimum": 1, "maximum": 200000,
                             "description": "How many new request ids to record as consumed."}},
    "required": ["count"],
    "additionalProperties": False,
})
def used_rounds_fill(count: int) -> dict:
    """Record count new request ids as consumed, as ctx.consume_answers does; report how many the store took."""
    store = server_store()
    recorded = 0
    for _ in range(count):
        try:
            store.fleet.use_once(secrets.token_bytes(16), store.settings.request_state_ttl_s)
        except CapacityError:
            continue
        recorded += 1
    return {"recorded": recorded, "refused": count - recorded}

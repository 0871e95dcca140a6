"""Test-side views of a hub that the server's contract does not offer: which streams are attached, and the hub itself.

Tools reach the server only through their `ctx`, which has no hub. Test plugins that must look
behind it (is this session's stream attached here? what does its replay log keep?) use this seam,
so the production contract stays as small as production needs.
"""

from __future__ import annotations

import gc

from flask_mcp_gevent.store import Store

__all__ = ["server_hub", "streaming_session_ids"]

_found: list[Store] = []


def server_hub() -> Store:
    """The hub of this process's server (a gunicorn worker has one), found once among live objects."""
    if not _found:
        hubs = [candidate for candidate in gc.get_objects() if isinstance(candidate, Store)]
        if len(hubs) != 1:
            raise RuntimeError(f"expected the one hub of this server process, found {len(hubs)}")
        _found.append(hubs[0])
    return _found[0]


def streaming_session_ids(hub: Store) -> list[str]:
    """Sessions whose own stream is attached in this worker, read from either backend's bookkeeping."""
    slots = getattr(hub, "slots", None)
    if slots is not None:
        return [session_id for session_id, slot in slots.items() if None in slot.streams]
    return [session_id for session_id, stream in hub.claims.local if stream is None]  # type: ignore[attr-defined]

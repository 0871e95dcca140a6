"""Test-side views of a store that the server's contract does not offer: which streams are attached, and the store
itself.

Tools reach the server only through their `ctx`, which has no store. Test plugins that must look
behind it (is this session's stream attached here? what does its replay log keep?) use this seam,
so the production contract stays as small as production needs.
"""

from __future__ import annotations

import gc

from flask_mcp_gevent.server import Server
from flask_mcp_gevent.store import Store

__all__ = ["server_store", "streaming_session_ids"]

_found: list[Store] = []


def server_store() -> Store:
    """The store of this process's server (a gunicorn worker has one), found once among live objects."""
    if not _found:
        servers = [candidate for candidate in gc.get_objects() if isinstance(candidate, Server)]
        if len(servers) != 1:
            raise RuntimeError(f"expected the one server of this process, found {len(servers)}")
        _found.append(servers[0].store)
    return _found[0]


def streaming_session_ids(store: Store) -> list[str]:
    """Sessions whose own stream is attached in this worker, read from either backend's bookkeeping."""
    slots = getattr(store.sessions, "slots", None)
    if slots is not None:
        return [session_id for session_id, slot in slots.items() if slot.own_stream is not None]
    return [session_id for session_id, stream in store.claims.local if stream is None]  # type: ignore[attr-defined]

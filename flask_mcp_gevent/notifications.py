"""Server-initiated notifications for the whole fleet: list changes and resource updates.

Each one goes to every live session that wants it, on every worker: the event log names the sessions, and keeps
the notification for a session whose stream is not attached right now. It also goes, once, to every worker's open
subscriptions/listen streams (flask_mcp_gevent/stateless/listen.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.session import Session
from flask_mcp_gevent.store import EventLog, SessionStore

__all__ = ["LIST_CHANGED", "Broadcaster", "announce", "list_changed", "resource_updated", "wants"]

log = logging.getLogger("mcp.notifications")

# The notification that says a registry table changed, by the kind of its entries.
LIST_CHANGED = {
    "tool": "notifications/tools/list_changed",
    "resource": "notifications/resources/list_changed",
    "resource template": "notifications/resources/list_changed",
    "prompt": "notifications/prompts/list_changed",
}
RESOURCE_UPDATED = "notifications/resources/updated"


class Broadcaster(Protocol):
    """What a broadcast goes through (a Server): the store's sessions and event log, its local sessions, the fleet."""

    sessions: SessionStore
    events: EventLog
    local_sessions: dict[str, tuple[Session, Callable[[dict[str, Any]], Any]]]

    def tell_every_worker(self, message: dict[str, Any]) -> None:
        """Hand a notification to every worker's listen streams."""


def list_changed(kind: str) -> dict[str, Any]:
    """The notification that a tool, resource or prompt list changed."""
    return {"jsonrpc": "2.0", "method": LIST_CHANGED[kind]}


def resource_updated(uri: str) -> dict[str, Any]:
    """The notification that the resource at uri changed."""
    return {"jsonrpc": "2.0", "method": RESOURCE_UPDATED, "params": {"uri": uri}}


def announce(server: Broadcaster, message: dict[str, Any]) -> None:
    """Send a notification to every session of the fleet that wants it, and to every listen stream."""
    deliver(server, message)
    try:
        server.tell_every_worker(message)
    except StoreUnavailable:
        log.warning("%s not sent to other workers' listen streams: the store is unreachable", message.get("method"))
    except Exception:
        log.exception("broadcast %s to listen streams failed", message.get("method"))


def deliver(server: Broadcaster, message: dict[str, Any]) -> None:
    """Publish a notification to every session of the fleet that wants it; a store outage loses it, logged."""
    try:
        for session_id in server.events.broadcast_session_ids():
            session = server.sessions.peek_session(session_id)
            if session is not None and wants(session, message):
                server.events.publish(session_id, message)
    except StoreUnavailable:
        log.warning("broadcast %s not delivered: the session store is unreachable", message.get("method"))
    except Exception:
        log.exception("broadcast %s failed", message.get("method"))
    for session, send in list(server.local_sessions.values()):
        if wants(session, message):
            send(message)


def wants(session: Session, message: dict[str, Any]) -> bool:
    """Whether a session should receive a broadcast notification."""
    if not session.initialized and not session.negotiated:
        return False
    if message.get("method") == RESOURCE_UPDATED:
        return message.get("params", {}).get("uri") in session.subscriptions
    return True

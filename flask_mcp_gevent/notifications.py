"""Server-initiated notifications for the whole fleet: list changes and resource updates.

Each one goes to every live session that wants it, on every worker: the hub names the sessions,
and its replay log keeps the notification for a session whose stream is not attached right now.
It also goes, once, to every worker's open subscriptions/listen streams (flask_mcp_gevent/stateless/listen.py).
"""

from __future__ import annotations

import logging
from typing import Any

from flask_mcp_gevent.session import Session
from flask_mcp_gevent.store import Store, StoreUnavailable

__all__ = ["LIST_CHANGED", "announce_list_changed", "deliver", "resource_updated", "tell_listeners", "wants"]

log = logging.getLogger("mcp.notifications")

# The notification that says a registry table changed, by the kind of its entries.
LIST_CHANGED = {
    "tool": "notifications/tools/list_changed",
    "resource": "notifications/resources/list_changed",
    "resource template": "notifications/resources/list_changed",
    "prompt": "notifications/prompts/list_changed",
}
RESOURCE_UPDATED = "notifications/resources/updated"


def announce_list_changed(hub: Store, kind: str) -> None:
    """Tell every session and listen stream that a tool, resource or prompt list changed."""
    message = {"jsonrpc": "2.0", "method": LIST_CHANGED[kind]}
    deliver(hub, message)
    tell_listeners(hub, message)


def resource_updated(hub: Store, uri: str) -> None:
    """Tell every session and listen stream subscribed to uri, on every worker, that it changed."""
    message = {"jsonrpc": "2.0", "method": RESOURCE_UPDATED, "params": {"uri": uri}}
    deliver(hub, message)
    tell_listeners(hub, message)


def deliver(hub: Store, message: dict[str, Any]) -> None:
    """Publish a notification to every session of the fleet that wants it; a store outage loses it, logged."""
    try:
        for session_id in hub.broadcast_session_ids():
            session = hub.peek_session(session_id)
            if session is not None and wants(session, message):
                hub.publish(session_id, message)
    except StoreUnavailable:
        log.warning("broadcast %s not delivered: the session store is unreachable", message.get("method"))
    except Exception:
        log.exception("broadcast %s failed", message.get("method"))


def tell_listeners(hub: Store, message: dict[str, Any]) -> None:
    """Hand a notification once to every worker's listen streams; a store outage loses it for other workers, logged."""
    try:
        hub.tell_every_worker(message)
    except StoreUnavailable:
        log.warning("%s not sent to other workers' listen streams: the hub is unreachable", message.get("method"))
    except Exception:
        log.exception("broadcast %s to listen streams failed", message.get("method"))


def wants(session: Session, message: dict[str, Any]) -> bool:
    """Whether a session should receive a broadcast notification."""
    if not session.initialized and not session.negotiated:
        return False
    if message.get("method") == RESOURCE_UPDATED:
        return message.get("params", {}).get("uri") in session.subscriptions
    return True

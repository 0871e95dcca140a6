"""The Redis store: workers and hosts share sessions, replay and delivery through Redis; nothing connects before use.

Per session: its JSON (idle TTL), a Redis Stream replay log (ids are event ids), a claim per stream naming its worker.
The store owns its parts and hands each the one link to Redis: the sessions and their call slots
(redis_sessions.py), the event log and its streams' claims (redis_events.py, redis_claims.py), the fleet bus
(redis_fleet.py); and this worker's greenlets: the reader of its channels, the refresher of its leases, with
Sentinel the watcher of the master.
"""

from __future__ import annotations

import logging
from typing import Any

import gevent

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.store.redis_claims import REFRESH_EVERY_S, Claims, RedisSubscription
from flask_mcp_gevent.store.redis_events import RedisEvents
from flask_mcp_gevent.store.redis_fleet import RedisFleet
from flask_mcp_gevent.store.redis_keys import session_keys
from flask_mcp_gevent.store.redis_link import RedisLink
from flask_mcp_gevent.store.redis_listener import Listener
from flask_mcp_gevent.store.redis_scripts import SCRIPTS
from flask_mcp_gevent.store.redis_sessions import RedisSessions

__all__ = ["RedisStore", "RedisSubscription", "session_keys"]

log = logging.getLogger("mcp.store")


class RedisStore:
    """The store for many workers and hosts: its parts share one link to Redis, which the store hands them."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings
        self._reader: gevent.Greenlet | None = None
        self._refresher: gevent.Greenlet | None = None
        self._watcher: gevent.Greenlet | None = None  # with Sentinel: follows the master (redis_listener.py)
        self.link = RedisLink(settings, self.start, SCRIPTS)
        self.claims = Claims(self.link, settings, lambda: gevent.getcurrent() is self._reader)
        self.sessions = RedisSessions(self.link, settings, self.claims)
        self.events = RedisEvents(self.link, settings, self.claims, self.start)
        self.listener = Listener(self.link, self.claims)
        self.fleet = RedisFleet(self.link, settings, self.listener, self.start)

    def start(self) -> None:
        """Connect lazily on first use (after gunicorn forks) and start the worker's greenlets."""
        if self.link.forked():  # forget everything a parent process owned: connections, streams, greenlets
            self.link.reset()
            self._reader = self._refresher = self._watcher = None
            for part in (self.claims, self.sessions, self.listener, self.fleet.registry_sync):
                part.reset()
        if self._reader is None or self._reader.dead:
            self._reader = gevent.spawn(self.listener.listen_forever)
        if self._refresher is None or self._refresher.dead:
            self._refresher = gevent.spawn(self._refresh_forever)
        if self.settings.redis_sentinels and (self._watcher is None or self._watcher.dead):
            self._watcher = gevent.spawn(self.listener.follow_master_forever)

    def _refresh_forever(self) -> None:
        """Every few seconds, keep this worker's call slots, streams' claims and their sessions alive."""
        # Well inside the session TTL too, so a session with a stream open never expires.
        interval = max(0.1, min(REFRESH_EVERY_S, self.settings.session_ttl_s / 3))
        while True:
            gevent.sleep(interval)
            try:
                self.sessions.renew_call_leases()
                self.claims.refresh()
            except StoreUnavailable:
                pass  # the subscriber greenlet logs the outage and resyncs when Redis returns
            except Exception:
                log.exception("refreshing stream claims failed")

    def stop(self) -> None:
        """Stop this worker's greenlets and close its connections (tests; a worker simply exits)."""
        for greenlet in (self._reader, self._refresher, self._watcher):
            if greenlet is not None:
                greenlet.kill(block=True, timeout=2)
        self.link.stop()

"""The Redis hub: workers and hosts share sessions, replay and delivery through Redis; nothing connects before use.

Per session: its JSON (idle TTL), a Redis Stream replay log (ids are event ids), a claim per stream naming its worker.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

import gevent

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.session import Session, SessionChange, SessionUpdate
from flask_mcp_gevent.store.base import SHARED_SECRET_BYTES, Store, StoreUnavailable
from flask_mcp_gevent.store.redis_claims import REFRESH_EVERY_S, Claims, RedisSubscription
from flask_mcp_gevent.store.redis_codec import milliseconds
from flask_mcp_gevent.store.redis_deliveries import Deliveries
from flask_mcp_gevent.store.redis_keys import (
    CONTROL_CHANNEL,
    SECRET_PREFIX,
    SESSION_INDEX,
    session_keys,
    used_rounds_key,
)
from flask_mcp_gevent.store.redis_link import RedisLink
from flask_mcp_gevent.store.redis_listener import Listener
from flask_mcp_gevent.store.redis_scripts import SCRIPTS
from flask_mcp_gevent.store.redis_sessions import CallSlots, Sessions
from flask_mcp_gevent.store.registry_sync import RegistrySync
from flask_mcp_gevent.store.subscription import Subscription
from flask_mcp_gevent.tasks.redis_store import TASK_SCRIPTS, RedisTaskStore

__all__ = ["RedisStore", "RedisSubscription", "session_keys"]

log = logging.getLogger("mcp.store")


class RedisStore(Store):
    """The hub for many workers and hosts: its parts share one link to Redis, which the hub hands them."""

    # Answers published after this worker exits still reach their clients, from any other worker.
    outlives_worker = True

    def __init__(self, settings: Any) -> None:
        super().__init__(settings)
        self._reader: gevent.Greenlet | None = None
        self._refresher: gevent.Greenlet | None = None
        self._watcher: gevent.Greenlet | None = None  # with Sentinel: follows the master (redis_listener.py)
        self.link = RedisLink(settings, self.start, {**SCRIPTS, **TASK_SCRIPTS})
        self.claims = Claims(self.link, settings, lambda: gevent.getcurrent() is self._reader)
        self.sessions = Sessions(self.link, settings, self.claims, self.pending_ttl_s)
        self.call_slots = CallSlots(self.link)
        self.deliveries = Deliveries(self.link, settings)
        self.registry_sync = RegistrySync(self.link, self.control)
        self.listener = Listener(self.link, self.claims, self.registry_sync, self.pending, self.inflight,
                                 self.hand_to_this_worker)
        self.tasks = RedisTaskStore(self.link, int(settings.task_max_ttl_s * 1000))

    # lifecycle
    def start(self) -> None:
        """Connect lazily on first use (after gunicorn forks) and start the worker's greenlets."""
        if self.link.forked():  # forget everything a parent process owned: connections, streams, greenlets
            self.link.reset()
            self._reader = self._refresher = self._watcher = None
            for part in (self.claims, self.call_slots, self.listener, self.registry_sync):
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
                self.call_slots.renew_call_leases()
                self.claims.refresh()
            except StoreUnavailable:
                pass  # the subscriber greenlet logs the outage and resyncs when Redis returns
            except Exception:
                log.exception("refreshing stream claims failed")

    # sessions (redis_sessions.py)
    def create_session(self, session: Session, owner: str | None = None, owner_limit: int = 0) -> None:
        """Store a new session (see Sessions.create_session)."""
        self.sessions.create_session(session, owner, owner_limit)

    def get_session(self, session_id: str, accept: Callable[[Session], bool] | None = None) -> Session | None:
        """Load a session and refresh its idle TTL (see Sessions.get_session)."""
        return self.sessions.get_session(session_id, accept)

    def peek_session(self, session_id: str) -> Session | None:
        """Load a session without refreshing its idle TTL."""
        return self.sessions.peek_session(session_id)

    def update_session(self, session_id: str, change: SessionChange) -> SessionUpdate:
        """Apply a change in one Lua script, keeping the session's TTL."""
        return self.sessions.update_session(session_id, change)

    def close_session(self, session_id: str) -> bool:
        """Delete the session's keys and end its streams on whichever workers hold them."""
        return self.sessions.close_session(session_id)

    def session_count(self) -> int:
        """How many sessions exist across every worker."""
        return self.sessions.session_count()

    # call slots (redis_sessions.py)
    def take_call_slot(self, session_id: str, limit: int) -> str | None:
        """Take a leased slot among the session's calls on every worker; None when limit are running."""
        return self.call_slots.take_call_slot(session_id, limit)

    def give_back_call_slot(self, session_id: str, token: str) -> None:
        """Free the slot (see Store.give_back_call_slot)."""
        self.call_slots.give_back_call_slot(session_id, token)

    # delivery (redis_deliveries.py)
    def publish(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Append to the session's replay log and route to the worker holding that stream."""
        return self.deliveries.publish(session_id, message, stream)

    def publish_once(self, session_id: str, message: Any, stream: str | None, token: str) -> str | None:
        """Publish unless an attempt with this token already ran (its reply lost to a timeout, say)."""
        return self.deliveries.publish(session_id, message, stream, token)

    # streams (redis_claims.py)
    def subscribe(
        self, session_id: str, last_event_id: str | None = None, *, exclusive: bool = False
    ) -> Subscription:
        """Attach a stream, pre-loaded with what it missed since last_event_id (that of a request stream resumes it)."""
        self.start()
        return self.claims.attach(session_id, last_event_id, exclusive)

    # fan-out and control
    def broadcast_session_ids(self) -> list[str]:
        """Every live session of the fleet, from the session index."""
        members = self.link.execute("ZRANGEBYSCORE", SESSION_INDEX, f"({milliseconds(time.time())}", "+inf")
        return [member.decode() for member in members]

    def resolve(self, session_id: str, response: dict[str, Any]) -> bool:
        """Wake the waiting tool here, or hand the answer to every other worker."""
        if self.pending.resolve(session_id, response):
            return True
        receivers = self.control({"op": "resolve", "session": session_id, "response": response})
        return receivers > (1 if self.listener.listening else 0)

    def cancel(self, session_id: str, request_id: Any) -> None:
        """Kill the request here, or ask every other worker to."""
        if not self.inflight.cancel(session_id, request_id):
            self.control({"op": "cancel", "session": session_id, "request": request_id})

    def tell_every_worker(self, message: dict[str, Any]) -> None:
        """Hand a notification to this worker's handler, then to every other worker's through the control channel."""
        self.hand_to_this_worker(message)
        self.control({"op": "tell", "message": message})

    def control(self, command: dict[str, Any]) -> int:
        """Publish a command on the control channel; return how many workers heard it."""
        return int(self.link.execute("PUBLISH", CONTROL_CHANNEL, dumps({**command, "origin": self.link.worker_id})))

    # operations
    def ready(self) -> bool:
        """True when the subscriber connection is up and Redis answers a PING."""
        self.start()
        if not self.listener.listening and not self.listener.first_attempt.is_set():
            self.listener.first_attempt.wait(self.settings.redis_timeout_s)
        if not self.listener.listening:
            return False
        try:
            return bool(self.link.execute("PING"))
        except StoreUnavailable:
            return False

    def shutdown(self) -> None:
        """End every stream on this worker; each lets go of its claim as it closes."""
        for subscription in list(self.claims.local.values()):
            subscription.end("server shutting down")

    def stop(self) -> None:
        """Stop this worker's greenlets and close its connections (tests; a worker simply exits)."""
        for greenlet in (self._reader, self._refresher, self._watcher):
            if greenlet is not None:
                greenlet.kill(block=True, timeout=2)
        self.link.stop()

    # run-time registry changes (flask_mcp_gevent/store/registry_sync.py)
    def share_registry(self, registry: Any) -> None:
        """Take this worker's run-time registry changes to every worker of the fleet, and theirs to this one."""
        self.registry_sync.share(registry)

    def prepare(self) -> None:
        """Subscribe and load the fleet's run-time registry changes before serving (bounded; Redis may be down)."""
        self.start()
        if not self.registry_sync.loaded.wait(self.settings.redis_timeout_s * 2):
            log.warning("serving before the registry's run-time changes were loaded: Redis did not answer")

    def shared_secret(self, name: str) -> bytes:
        """A random secret every worker and host shares: the first to ask stores it (SET NX), the rest read it."""
        key = SECRET_PREFIX + name
        self.link.execute("SET", key, secrets.token_hex(SHARED_SECRET_BYTES), "NX")
        value = self.link.execute("GET", key)
        return bytes.fromhex(value.decode())

    # multi-round requests made single-use: one key per request id, set once with NX, then expired
    def use_once(self, rounds_id: bytes, ttl_s: float) -> bool:
        """SET the id's key NX PX ttl: only the first of any number of workers and hosts gets OK."""
        reply = self.link.execute("SET", used_rounds_key(rounds_id), "1", "NX", "PX", milliseconds(ttl_s))
        return reply is not None

    def is_used(self, rounds_id: bytes) -> bool:
        """Whether the id's key exists (Redis drops it when its time is over)."""
        return bool(self.link.execute("EXISTS", used_rounds_key(rounds_id)))

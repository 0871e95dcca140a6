"""The Redis store's fleet bus: the control channel every worker reads, the registry's run-time changes, consumed
requests and shared secrets, each kept once for the whole fleet."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.store.ports import FleetBus, FleetWorker
from flask_mcp_gevent.store.redis_codec import milliseconds
from flask_mcp_gevent.store.redis_keys import CONTROL_CHANNEL, SECRET_PREFIX, used_rounds_key
from flask_mcp_gevent.store.redis_link import RedisLink
from flask_mcp_gevent.store.redis_listener import Listener
from flask_mcp_gevent.store.registry_sync import RegistrySync

__all__ = ["RedisFleet"]

log = logging.getLogger("mcp.store")
# Secrets the fleet shares (shared_secret): 256 random bits.
SHARED_SECRET_BYTES = 32


class RedisFleet(FleetBus):
    """Every worker of every host that shares one Redis: commands on the control channel, agreements in keys."""

    def __init__(self, link: RedisLink, settings: Any, listener: Listener, start: Callable[[], None]) -> None:
        self.link = link
        self.settings = settings
        self.listener = listener
        # Starts the worker's reader greenlet, which hears what the other workers send.
        self.start = start
        self.registry_sync = RegistrySync(link, self.control)
        listener.registry_sync = self.registry_sync

    def serve(self, worker: FleetWorker) -> None:
        """Hand what other workers send to this worker's server."""
        self.listener.worker = worker

    def control(self, command: dict[str, Any]) -> int:
        """Publish a command on the control channel; return how many workers heard it."""
        return int(self.link.execute("PUBLISH", CONTROL_CHANNEL, dumps({**command, "origin": self.link.worker_id})))

    def resolve_elsewhere(self, session_id: str, response: dict[str, Any]) -> bool:
        """Hand the answer to every other worker: whether any other heard it (this one hears its own, and skips it)."""
        receivers = self.control({"op": "resolve", "session": session_id, "response": response})
        return receivers > (1 if self.listener.listening else 0)

    def cancel_elsewhere(self, session_id: str, request_id: Any) -> None:
        """Ask every other worker to stop the request, if it runs there."""
        self.control({"op": "cancel", "session": session_id, "request": request_id})

    def tell_others(self, message: dict[str, Any]) -> None:
        """Hand a notification to every other worker's listen streams through the control channel."""
        self.control({"op": "tell", "message": message})

    def share_registry(self, registry: Any) -> None:
        """Take this worker's run-time registry changes to every worker of the fleet, and theirs to this one."""
        self.registry_sync.share(registry)

    def prepare(self) -> None:
        """Subscribe and load the fleet's run-time registry changes before serving (bounded; Redis may be down)."""
        self.start()
        if not self.registry_sync.loaded.wait(self.settings.redis_timeout_s * 2):
            log.warning("serving before the registry's run-time changes were loaded: Redis did not answer")

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

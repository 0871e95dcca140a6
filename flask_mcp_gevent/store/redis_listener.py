"""The Redis store's subscriber greenlet: one connection per worker reads its channel and the control channel."""

from __future__ import annotations

import logging
import random
import time
from typing import Any

import gevent
from gevent.event import Event
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.encoding import loads
from flask_mcp_gevent.store.ports import FleetWorker
from flask_mcp_gevent.store.redis_claims import Claims
from flask_mcp_gevent.store.redis_connection import UNAVAILABLE, subscriber_connection
from flask_mcp_gevent.store.redis_keys import CONTROL_CHANNEL, WORKER_CHANNEL
from flask_mcp_gevent.store.redis_link import RedisLink
from flask_mcp_gevent.store.redis_multiplex import READ_SIZE, HiredisParser, pack
from flask_mcp_gevent.store.registry_sync import RegistrySync

log = logging.getLogger("mcp.store")

# The subscriber connection pings when quiet; silence this long means Redis is gone.
LISTEN_PING_S = 2.0
LISTEN_DEAD_S = 6.0
RECONNECT_MIN_S = 0.1
RECONNECT_MAX_S = 2.0
# With Sentinel, how often each worker asks where the master is: a master that outlived its failover (a planned
# one, a partition) still takes writes, which its demotion then throws away.
MASTER_CHECK_S = 1.0


class Listener:
    """RedisStore's subscriber greenlet: it routes events into this worker's streams, commands to its server."""

    def __init__(self, link: RedisLink, claims: Claims) -> None:
        self.link = link
        self.claims = claims
        # Set by the fleet bus: the registry's run-time changes, and the server other workers' commands go to.
        self.registry_sync: RegistrySync | None = None
        self.worker: FleetWorker | None = None
        self.reset()

    def reset(self) -> None:
        """Not listening yet (after a fork too: the parent's connection is not this process's)."""
        self.subscriber: Any = None
        self.master_moved = False
        self.listening = False
        # Set once the first attempt to subscribe succeeded or failed (ready() waits for it).
        self.first_attempt = Event()

    def listen_forever(self) -> None:
        """Read this worker's channel and the control channel; reconnect with backoff when Redis goes."""
        backoff = RECONNECT_MIN_S
        while True:
            connection = None
            try:
                # To the master the Sentinels name now (after a failover, the new one), or to any cluster master.
                connection = self.subscriber = subscriber_connection(self.link.client)
                connection.connect()
                # Live events wait behind the catch-up from the replay log (resync_all): one arriving first
                # would move a stream past what was published while nobody listened, and that would be skipped.
                number = self.claims.hold_all()
                reader = SubscriberReader(connection)
                reader.subscribe(CONTROL_CHANNEL, WORKER_CHANNEL + self.link.worker_id)
                log.info("worker %s subscribed to Redis", self.link.worker_id)
                # Subscribed first, so a change made meanwhile is heard too (versions make hearing it twice harmless).
                if self.registry_sync is not None:
                    self.registry_sync.load()
                self.listening = True
                self.first_attempt.set()
                backoff = RECONNECT_MIN_S
                # Anything published while we were not listening is in the replay log.
                gevent.spawn(self.claims.resync_all, number)
                self.master_moved = False
                self._read(reader)
            except (*UNAVAILABLE, StoreUnavailable) as exc:  # StoreUnavailable: from the link (loading the registry)
                if self.listening:
                    log.warning("lost the Redis subscriber connection (%s); reconnecting", type(exc).__name__)
            except Exception:
                log.exception("Redis subscriber failed; reconnecting")
            finally:
                self.listening = False
                self.first_attempt.set()
                if connection is not None:
                    connection.disconnect()
            gevent.sleep(backoff * (0.5 + random.random()))
            backoff = min(backoff * 2, RECONNECT_MAX_S)

    def follow_master_forever(self) -> None:
        """With Sentinel: ask the Sentinels where the master is, and move the subscriber there once it moved."""
        # Commands follow the master by themselves: the pool drops its connections to a former master.
        pool = self.link.client.connection_pool
        while True:
            gevent.sleep(MASTER_CHECK_S)
            try:
                address = pool.get_master_address()
            except UNAVAILABLE:
                continue  # no Sentinel answers, or none knows a master: the commands say so themselves
            subscriber = self.subscriber
            if self.listening and subscriber is not None and (subscriber.host, subscriber.port) != address:
                log.warning("the Sentinels name a new master; moving this worker's subscriber connection there")
                self.master_moved = True  # the reader acts on it between messages (or within LISTEN_PING_S)

    def _read(self, reader: SubscriberReader) -> None:
        """Dispatch messages until the connection fails; ping when quiet to notice a silent Redis."""
        heard = time.monotonic()
        while not self.master_moved:
            replies = reader.replies(LISTEN_PING_S)
            if replies is None:
                if time.monotonic() - heard > LISTEN_DEAD_S:
                    raise RedisTimeoutError("no answer from Redis on the subscriber connection")
                reader.send("PING")
                continue
            heard = time.monotonic()
            for reply in replies:
                if isinstance(reply, list) and len(reply) == 3 and reply[0] == b"message":
                    self._dispatch(reply[1], reply[2])
        raise RedisConnectionError("the Sentinels name another master")

    def _dispatch(self, channel: bytes, data: bytes) -> None:
        """Route one pub/sub message: an event or stream end for a local stream, or a control command."""
        if channel == CONTROL_CHANNEL.encode():
            self._obey(loads(data))
            return
        kind, session_id, stream, ident, payload = data.split(b"\n", 4)
        subscription = self.claims.local.get((session_id.decode(), stream.decode() or None))
        if subscription is None:
            return
        if kind == b"m":
            subscription.offer(ident.decode(), payload)
        elif kind == b"e" and subscription.owner.endswith("|" + ident.decode()):
            self.claims.drop(subscription, payload.decode())

    def _obey(self, command: dict[str, Any]) -> None:
        """Act on a control command from another worker."""
        op = command.get("op")
        if op == "closed":
            self.claims.end_session(command["session"], "session closed")
            return
        if self.registry_sync is not None and self.registry_sync.obey(command):
            return
        if command.get("origin") == self.link.worker_id or self.worker is None:
            return
        if op == "resolve":
            self.worker.resolve_here(command["session"], command["response"])
        elif op == "cancel":
            self.worker.cancel_here(command["session"], command["request"])
        elif op == "tell":
            # The sender handed it to its own streams already (it skips its own echo above).
            self.worker.hand_here(command["message"])


class SubscriberReader:
    """The subscriber connection's socket, read directly: one receive and one parse for every message waiting."""

    def __init__(self, connection: Any) -> None:
        # redis-py's connection set it up (address, TLS, AUTH, SELECT); from SUBSCRIBE on, only this greenlet reads.
        self.sock = connection._sock
        self.timeout = self.sock.gettimeout()  # MCP_REDIS_TIMEOUT_S, for the confirmations
        self.parser = HiredisParser()
        self.waiting: list[Any] = []

    def send(self, *command: Any) -> None:
        """Send one command."""
        self.sock.sendall(pack(command))

    def subscribe(self, *channels: str) -> None:
        """Subscribe and wait for Redis to confirm each channel (messages behind the confirmations are kept)."""
        self.send("SUBSCRIBE", *channels)
        confirmed = 0
        while confirmed < len(channels):
            replies = self.replies(self.timeout)
            if replies is None:
                raise RedisTimeoutError("Redis did not confirm the subscription")
            while replies and confirmed < len(channels):
                reply = replies.pop(0)
                if isinstance(reply, list) and reply[:1] == [b"subscribe"]:
                    confirmed += 1
            self.waiting = replies or []

    def replies(self, timeout: float | None) -> list[Any] | None:
        """The replies that arrive next (at least one); None after timeout seconds of silence."""
        if self.waiting:
            waiting, self.waiting = self.waiting, []
            return waiting
        self.sock.settimeout(timeout)
        while True:
            try:
                data = self.sock.recv(READ_SIZE)
            except TimeoutError:
                return None
            if not data:
                raise RedisConnectionError("Redis closed the subscriber connection")
            replies = self.parser.feed(data)
            if replies:
                return replies

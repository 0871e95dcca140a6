"""The Redis hub: many workers and many hosts share sessions, replay and delivery through Redis.

Per session: its state as JSON with an idle TTL, a capped Redis Stream as the
replay log (stream entry ids are the SSE event ids, so `Last-Event-ID` resumes on
any worker), and for each attached stream (the session's own, or a resumed
request stream) a claim naming the worker that holds it. Publishing is one Lua
script: append to the log, then PUBLISH to the claiming worker's channel. Each
worker keeps ONE subscriber connection (its own channel plus the control channel
that carries answers, cancellations, broadcasts and closed sessions), read by one
greenlet that hands messages to local queues. Nothing connects or spawns before
first use.
"""

from __future__ import annotations

import logging
import os
import random
import re
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

import gevent
import gevent.monkey
import gevent.queue
import gevent.socket
import redis
from gevent.event import Event
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from mcp_server.encoding import dumps, loads
from mcp_server.hub.base import (
    CapacityError,
    Hub,
    HubUnavailable,
    QueuedSubscription,
    QuotaFull,
    StreamConflict,
    Subscription,
    join_event_id,
    split_event_id,
)
from mcp_server.hub.mailbox import Empty, Mailbox
from mcp_server.hub.redis_scripts import (
    CONTROL_CHANNEL,
    DELIVERY_PREFIX,
    SCRIPTS,
    SESSION_INDEX,
    WORKER_CHANNEL,
    call_slots_key,
    owner_key,
    session_keys,
)
from mcp_server.hub.registry_sync import RegistrySync
from mcp_server.metrics import instruments
from mcp_server.session import Session, SessionChange, SessionUpdate

__all__ = ["RedisHub", "RedisSubscription", "session_keys"]

log = logging.getLogger("mcp.hub")

# How long a stream's claim on its session lasts without a refresh, and how often it is refreshed.
ATTACH_TTL_S = 20.0
REFRESH_EVERY_S = 5.0
# How long a running tool call's slot is held without a renewal (the refresher renews it while the call runs),
# so the slots of a killed worker come back within this.
CALL_LEASE_S = 15.0
# The subscriber connection pings when quiet; silence this long means Redis is gone.
LISTEN_PING_S = 2.0
LISTEN_DEAD_S = 6.0
RECONNECT_MIN_S = 0.1
RECONNECT_MAX_S = 2.0
REFRESH_BATCH = 500
# get_session refreshes a session's TTL with a script at most this often per worker (a plain GET between),
# and never less often than a tenth of the TTL; the memory of when is bounded.
REFRESH_TTL_EVERY_S = 2.0
MAX_TTL_REFRESH_MEMORY = 100_000
# A delivery token outlives the last retry of its answer by this much.
DELIVERY_TOKEN_MARGIN_S = 5.0
# Stored as JSON text inside the session's JSON, so the update script's cjson passes them through unchanged.
CLIENT_CHOSEN_FIELDS = ("client_info", "client_capabilities")
EVENT_POSITION = re.compile(r"^[0-9]{1,20}(-[0-9]{1,20})?$")
REPLAY_NOTHING = "$"
UNAVAILABLE = (RedisConnectionError, RedisTimeoutError, ReadOnlyError, OSError)
# The standard library's own socket class, even where gevent has patched the module.
BLOCKING_SOCKET = gevent.monkey.get_original("socket", "socket")


def replay_position(position: str | None) -> str:
    """Where a resumed stream's replay starts: after a Redis stream id ("0" is before everything)."""
    if position is None or not EVENT_POSITION.match(position):
        return REPLAY_NOTHING  # an unreadable id replays nothing rather than everything
    return position if "-" in position else position + "-0"


def entries_of(raw: list[Any], stream: str | None) -> list[tuple[str, bytes]]:
    """The (id, json) of replay entries that belong to one stream (None: the session's own)."""
    wanted = b"" if stream is None else stream.encode()
    entries = []
    for event_id, fields in raw:
        if not isinstance(fields, dict):  # a Lua reply: [field, value, field, value]
            fields = dict(zip(fields[::2], fields[1::2], strict=True))
        if fields.get(b"s", b"") == wanted:
            entries.append((event_id.decode(), fields[b"d"]))
    return entries


def session_json(session: Session) -> bytes:
    """Encode a session for Redis, the fields the client chose as JSON text (see UPDATE_SCRIPT)."""
    data = session.to_dict()
    for name in CLIENT_CHOSEN_FIELDS:
        data[name] = client_chosen_json(data[name])
    return dumps(data)


def client_chosen_json(value: Any) -> str:
    """A client-chosen field's value as the JSON text the session stores."""
    return dumps(value).decode()


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


class CooperativeConnection(redis.Connection):
    """A redis-py TCP connection whose socket is gevent's, patched process or not."""

    def _connect(self) -> Any:
        """Connect as redis-py does, then hand the socket to gevent if it is a blocking stdlib one."""
        sock = super()._connect()
        if type(sock) is BLOCKING_SOCKET:
            cooperative = gevent.socket.socket(sock.family, sock.type, sock.proto, fileno=sock.detach())
            cooperative.settimeout(self.socket_timeout)
            return cooperative
        return sock


class RedisSubscription(QueuedSubscription):
    """A stream on this worker: replayed events first, then live ones from the subscriber greenlet."""

    def __init__(self, hub: RedisHub, session_id: str, stream: str | None, maxsize: int, max_bytes: int) -> None:
        self.hub = hub
        self.session_id = session_id
        self.stream = stream
        self.owner = hub.worker_id + "|" + secrets.token_hex(8)
        # Unbounded underneath so the close sentinel always fits; offer() enforces maxsize and max_bytes.
        self.queue: Mailbox = Mailbox()
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        self.reason: str | None = None
        self.last_queued: tuple[int, int] = (0, 0)
        self.delivered: str | None = None
        self.released = False
        # While replay is being read, live events wait here so nothing jumps the queue.
        self.held: list[tuple[str, bytes]] | None = []
        self.held_bytes = 0
        self.loaded = Event()

    @property
    def key(self) -> tuple[str, str | None]:
        """Where this worker routes the stream's live events from: (session id, request stream)."""
        return self.session_id, self.stream

    def offer(self, event_id: str, data: bytes) -> None:
        """Queue a live event once; a consumer too slow to keep up is cut off instead of growing memory."""
        if self.reason is not None:
            return
        if self.held is not None:
            if len(self.held) >= self.maxsize or (self.held and self.held_bytes + len(data) > self.max_bytes):
                self.cut_off()
            else:
                self.held.append((event_id, data))
                self.held_bytes += len(data)
            return
        order = event_order(event_id)
        if order <= self.last_queued:
            return
        if self.is_full(data):
            self.cut_off()
            return
        self.last_queued = order
        self.enqueue((event_id, data))

    def hold(self) -> None:
        """Start holding live events back while missed ones are read from the replay log."""
        if self.held is None:
            self.held = []
            self.held_bytes = 0

    def fill(self, entries: list[tuple[str, bytes]], floor: str | None = None, bounded: bool = False) -> None:
        """Queue missed events after floor, then the held live ones.

        A new stream's replay bypasses the bound (the replay log is capped); a catch-up
        after a lost subscriber connection is live traffic and counts against it.
        """
        if floor is not None:
            self.last_queued = max(self.last_queued, event_order(floor))
        held, self.held, self.held_bytes = self.held or [], None, 0
        for event_id, data in entries:
            order = event_order(event_id)
            if bounded:
                self.offer(event_id, data)
            elif order > self.last_queued and self.reason is None:
                self.last_queued = order
                self.enqueue((event_id, data))
        for event_id, data in held:
            self.offer(event_id, data)
        self.loaded.set()

    def cut_off(self) -> None:
        """Close a stream whose client stopped reading, and drop what it queued."""
        log.warning("closing stream of session %s: queue full (slow consumer)", self.session_id[:8])
        instruments().queue_dropped()
        while True:
            try:
                self.queue.get_nowait()
            except Empty:
                break
        self.queued_bytes = 0
        self.held = None
        self.end("slow consumer")
        self.hub.forget(self, detach=True)
        self.cut_connection()

    def get(self, timeout: float) -> tuple[str, bytes] | None:
        """Return the next (event id, json), None on timeout; raise StreamClosed once ended."""
        item = self.next_item(timeout)
        if item is None:
            return None
        self.delivered = item[0]
        return join_event_id(item[0], self.stream), item[1]

    def close(self, reason: str = "client gone") -> None:
        """Let go of the stream; the session's own stream starts the resume window."""
        if self.reason is None:
            self.reason = reason
        self.hub.forget(self, detach=True)


class RedisHub(Hub):
    """The hub for many workers and hosts."""

    # Answers published after this worker exits still reach their clients, from any other worker.
    outlives_worker = True

    def __init__(self, settings: Any) -> None:
        super().__init__(settings)
        self.local: dict[tuple[str, str | None], RedisSubscription] = {}
        self.worker_id = ""
        self._pid: int | None = None
        self._client: redis.Redis | None = None
        self._scripts: dict[str, Any] = {}
        self._listener: gevent.Greenlet | None = None
        self._refresher: gevent.Greenlet | None = None
        self._listening = False
        self._first_attempt = Event()
        self._down_since: float | None = None
        self._ttl_refreshed: dict[str, float] = {}
        self.registry_sync = RegistrySync(self)
        # The call slots this worker holds, token -> session id, renewed while their calls run.
        self._call_leases: dict[str, str] = {}
        self._refresh_ttl_every_s = min(REFRESH_TTL_EVERY_S, settings.session_ttl_s / 10,
                                        settings.resume_window_s / 10 or REFRESH_TTL_EVERY_S)

    # lifecycle
    def start(self) -> None:
        """Connect lazily on first use (after gunicorn forks) and start the worker's two greenlets."""
        if self._pid != os.getpid():
            self._reset_after_fork()
        if self._listener is None or self._listener.dead:
            self._listener = gevent.spawn(self._listen_forever)
        if self._refresher is None or self._refresher.dead:
            self._refresher = gevent.spawn(self._refresh_forever)

    def _reset_after_fork(self) -> None:
        """Forget everything a parent process owned: connections, streams, greenlets."""
        self._pid = os.getpid()
        # The pid makes a stream's owner readable in Redis (which process holds it); the token, unique.
        self.worker_id = f"{os.getpid()}-{secrets.token_hex(6)}"
        self.local = {}
        self._call_leases = {}
        self._listener = None
        self._refresher = None
        self._listening = False
        self._first_attempt = Event()
        self.registry_sync.reset()
        settings = self.settings
        options: dict[str, Any] = {
            "max_connections": settings.redis_pool_size,
            "timeout": settings.redis_timeout_s,
            "queue_class": gevent.queue.LifoQueue,
            "socket_timeout": settings.redis_timeout_s,
            "socket_connect_timeout": settings.redis_timeout_s,
            # A retried script could append an event twice; a broken pooled connection is
            # already replaced by the pool before use, so no retries.
            "retry": Retry(NoBackoff(), 0),
            "protocol": 2,
            "client_name": "mcp-" + self.worker_id,
        }
        if urlparse(settings.redis_url).scheme == "redis":
            options["connection_class"] = CooperativeConnection
        pool = redis.BlockingConnectionPool.from_url(settings.redis_url, **options)
        self._client = redis.Redis(connection_pool=pool)
        self._scripts = {name: self._client.register_script(source) for name, source in SCRIPTS.items()}

    @property
    def client(self) -> redis.Redis:
        """The command connection pool's client, created on first use."""
        self.start()
        assert self._client is not None
        return self._client

    @contextmanager
    def _redis(self) -> Iterator[None]:
        """Turn connection failures into HubUnavailable, logging the outage once."""
        try:
            yield
        except UNAVAILABLE as exc:
            if self._down_since is None:
                self._down_since = time.monotonic()
                log.warning("Redis unreachable (%s); answering 503 until it returns", type(exc).__name__)
            raise HubUnavailable("session store unreachable") from None
        else:
            if self._down_since is not None:
                log.info("Redis reachable again after %.1f s", time.monotonic() - self._down_since)
                self._down_since = None

    def _run(self, name: str, keys: list[str], args: list[Any], client: Any = None) -> Any:
        """Run one of the hub's Lua scripts."""
        self.start()
        return self._scripts[name](keys=keys, args=args, client=client)

    # sessions
    def create_session(self, session: Session, owner: str | None = None, owner_limit: int = 0) -> None:
        """Store a new session with the pending TTL; CapacityError at MCP_MAX_SESSIONS, QuotaFull for the owner.

        Both counts are of the whole fleet, checked and taken in one script.
        """
        keys = session_keys(session.id)
        script_keys = [keys["session"], SESSION_INDEX]
        args = [session_json(session), milliseconds(self.pending_ttl_s), self.settings.max_sessions, session.id]
        if owner is not None:
            script_keys.append(owner_key(owner))
            # The script finds the owner's other sessions' keys from this prefix ("mcp:session:").
            args += [owner_limit, keys["session"][: -len(session.id)]]
        with self._redis():
            stored = self._run("create", script_keys, args)
        if stored == -1:
            raise QuotaFull(owner)
        if not stored:
            raise CapacityError(f"this server holds its maximum of {self.settings.max_sessions} sessions")

    def take_call_slot(self, session_id: str, limit: int) -> str | None:
        """Take a leased slot among the session's calls on every worker; None when limit are running."""
        self.start()  # after a fork, worker_id names this process
        token = self.worker_id + "|" + secrets.token_hex(8)
        with self._redis():
            taken = self._run("take_call_slot", [call_slots_key(session_id)],
                              [token, limit, milliseconds(CALL_LEASE_S)])
        if not taken:
            return None
        self._call_leases[token] = session_id
        return token

    def give_back_call_slot(self, session_id: str, token: str) -> None:
        """Free the slot now; if Redis cannot be reached, its lease runs out instead."""
        self._call_leases.pop(token, None)
        try:
            with self._redis():
                self.client.zrem(call_slots_key(session_id), token)
        except HubUnavailable:
            log.info("could not free a call slot of session %s: Redis unreachable", session_id[:8])

    def renew_call_leases(self) -> None:
        """Extend the lease of every call slot this worker holds, in one round trip per batch."""
        leases = list(self._call_leases.items())
        for start in range(0, len(leases), REFRESH_BATCH):
            with self._redis():
                pipe = self.client.pipeline(transaction=False)
                for token, session_id in leases[start:start + REFRESH_BATCH]:
                    self._run("renew_call_slot", [call_slots_key(session_id)], [token, milliseconds(CALL_LEASE_S)],
                              client=pipe)
                pipe.execute()

    def get_session(self, session_id: str, accept: Callable[[Session], bool] | None = None) -> Session | None:
        """Load a session and refresh its idle TTL (at most every REFRESH_TTL_EVERY_S per worker).

        With accept, the session is read first without touching it, and refreshed only if accept takes it.
        """
        now = time.monotonic()
        refreshed = self._ttl_refreshed.get(session_id)
        # A session read moments ago has a fresh TTL: a plain GET (one Redis command, not a script) suffices.
        fresh = refreshed is not None and now - refreshed < self._refresh_ttl_every_s
        if fresh or accept is not None:
            session = self.peek_session(session_id)
            if session is None or (accept is not None and not accept(session)):
                return None
            if fresh:
                return session
        keys = session_keys(session_id)
        with self._redis():
            data = self._run(
                "get",
                [keys["session"], keys["detached"], keys["replay"], keys["delivered"], SESSION_INDEX],
                [milliseconds(self.settings.session_ttl_s), session_id],
            )
        if data is None:
            self._ttl_refreshed.pop(session_id, None)
            return None
        if len(self._ttl_refreshed) >= MAX_TTL_REFRESH_MEMORY:
            self._ttl_refreshed.clear()
        self._ttl_refreshed[session_id] = now
        return session_from_json(data)

    def peek_session(self, session_id: str) -> Session | None:
        """Load a session without refreshing its idle TTL (quota checks)."""
        with self._redis():
            data = self.client.get(session_keys(session_id)["session"])
        return None if data is None else session_from_json(data)

    def save_session(self, session: Session) -> None:
        """Store a changed session, keeping its TTL; a closed session stays closed."""
        with self._redis():
            self.client.set(session_keys(session.id)["session"], session_json(session), xx=True, keepttl=True)

    def update_session(self, session_id: str, change: SessionChange) -> SessionUpdate:
        """Apply a change in one Lua script (read, change, write), keeping the session's TTL."""
        assign = {name: client_chosen_json(value) if name in CLIENT_CHOSEN_FIELDS else value
                  for name, value in change.assign.items()}
        limit = -1 if change.subscription_limit is None else change.subscription_limit
        with self._redis():
            reply = self._run(
                "update",
                [session_keys(session_id)["session"]],
                [dumps(assign), change.subscribe or "", change.unsubscribe or "", limit,
                 "1" if change.unless_negotiated else "0"],
            )
        if reply[0] == 0:
            return SessionUpdate(False, None)
        return SessionUpdate(reply[0] == 1, session_from_json(reply[1]))

    def close_session(self, session_id: str) -> bool:
        """Delete the session's keys and end its streams on whichever workers hold them."""
        self._ttl_refreshed.pop(session_id, None)
        self._end_local(session_id, "session closed")
        keys = session_keys(session_id)
        with self._redis():
            existed = self._run(
                "close",
                [keys["session"], keys["replay"], keys["delivered"], keys["claim"], keys["detached"],
                 SESSION_INDEX, keys["replay_sizes"], keys["replay_bytes"]],
                [session_id, CONTROL_CHANNEL],
            )
        return bool(existed)

    def session_count(self) -> int:
        """How many sessions exist across every worker."""
        with self._redis():
            return int(self._run("count", [SESSION_INDEX], []))

    # delivery
    def publish(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Append to the session's replay log and route to the worker holding that stream."""
        keys, args = self._publish_arguments(session_id, message, stream)
        with self._redis():
            position = self._run("publish", keys, args)
        return None if position is None else join_event_id(position.decode(), stream)

    def publish_once(self, session_id: str, message: Any, stream: str | None, token: str) -> str | None:
        """Publish unless an attempt with this token already ran (its reply lost to a timeout, say)."""
        keys, args = self._publish_arguments(session_id, message, stream)
        # Remembered past the last retry, which may run up to a pool wait and a command timeout after its start.
        remember_s = self.settings.delivery_retry_s + 2 * self.settings.redis_timeout_s + DELIVERY_TOKEN_MARGIN_S
        with self._redis():
            position = self._run("deliver", [*keys, DELIVERY_PREFIX + token], [*args, milliseconds(remember_s)])
        return None if position is None else join_event_id(position.decode(), stream)

    def _publish_arguments(self, session_id: str, message: Any, stream: str | None) -> tuple[list[str], list[Any]]:
        """The keys and arguments of the publish script for one message."""
        keys = session_keys(session_id, stream)
        return ([keys["session"], keys["replay"], keys["claim"], keys["replay_sizes"], keys["replay_bytes"]],
                [dumps(message), self.settings.replay_max, session_id, stream or "", WORKER_CHANNEL,
                 self.settings.replay_max_bytes])

    def subscribe(
        self, session_id: str, last_event_id: str | None = None, *, exclusive: bool = False
    ) -> Subscription:
        """Attach a stream, pre-loaded with what it missed since last_event_id (or never got).

        A last_event_id of a request stream ("<position>/<stream>") resumes that stream.
        """
        self.start()
        position, stream = split_event_id(last_event_id)
        previous = self.local.get((session_id, stream))
        if previous is not None and exclusive:
            raise StreamConflict(session_id)
        if last_event_id is not None:
            after = replay_position(position)
        elif previous is not None and previous.delivered is not None:
            after = previous.delivered
        else:
            after = ""  # the script reads what the last stream recorded as delivered
        subscription = RedisSubscription(self, session_id, stream, self.settings.queue_max,
                                         self.settings.queue_max_bytes)
        # Registered before the claim, so live events published right after it are held, not lost.
        self.local[subscription.key] = subscription
        keys = session_keys(session_id, stream)
        try:
            with self._redis():
                reply = self._run(
                    "attach",
                    [keys["session"], keys["claim"], keys["replay"], keys["delivered"], keys["detached"]],
                    [subscription.owner, "1" if exclusive else "0", after, milliseconds(ATTACH_TTL_S),
                     milliseconds(self.settings.session_ttl_s), session_id, WORKER_CHANNEL, self.worker_id,
                     stream or ""],
                )
        except BaseException:
            self._unregister(subscription, restore=previous)
            raise
        if reply[0] == 0:
            self._unregister(subscription, restore=previous)
            raise KeyError(session_id)
        if reply[0] == -1:
            self._unregister(subscription, restore=previous)
            raise StreamConflict(session_id)
        if previous is not None:
            previous.released = True
            previous.end("replaced by a newer stream")
        subscription.fill(entries_of(reply[1], stream), reply[2].decode())
        return subscription

    def _unregister(self, subscription: RedisSubscription, restore: RedisSubscription | None = None) -> None:
        """Drop a subscription from this worker's routing table if it is still there."""
        if self.local.get(subscription.key) is subscription:
            del self.local[subscription.key]
            if restore is not None and restore.reason is None:
                self.local[subscription.key] = restore

    def forget(self, subscription: RedisSubscription, detach: bool) -> None:
        """Stop routing to a subscription and, once, give up its claim."""
        self._unregister(subscription)
        if subscription.released:
            return
        subscription.released = True
        if detach:
            if gevent.getcurrent() is self._listener:
                gevent.spawn(self._detach, subscription)  # the reader must never wait on Redis
            else:
                self._detach(subscription)

    def _detach(self, subscription: RedisSubscription) -> None:
        """Let go of the claim; the session's own stream records what it delivered and starts the resume window."""
        keys = session_keys(subscription.session_id, subscription.stream)
        try:
            with self._redis():
                self._run(
                    "detach",
                    [keys["claim"], keys["delivered"], keys["session"], keys["replay"], keys["detached"]],
                    [subscription.owner, subscription.delivered or "", int(self.settings.resume_window_s * 1000),
                     "1" if subscription.stream is None else "0"],
                )
        except HubUnavailable:
            log.info("could not release stream of session %s: Redis unreachable", subscription.session_id[:8])

    def _end_local(self, session_id: str, reason: str) -> None:
        """End this worker's streams of a session (its own and request streams)."""
        for key in [key for key in self.local if key[0] == session_id]:
            self._drop(self.local[key], reason)

    def _drop(self, subscription: RedisSubscription, reason: str) -> None:
        """End a local stream whose session is gone or whose claim is held elsewhere."""
        subscription.released = True
        self._unregister(subscription)
        subscription.end(reason)

    # fan-out and control
    def broadcast_session_ids(self) -> list[str]:
        """Every live session of the fleet, from the session index."""
        with self._redis():
            members = self.client.zrangebyscore(SESSION_INDEX, f"({milliseconds(time.time())}", "+inf")
        return [member.decode() for member in members]

    def resolve(self, session_id: str, response: dict[str, Any]) -> bool:
        """Wake the waiting tool here, or hand the answer to every other worker."""
        if self.pending.resolve(session_id, response):
            return True
        receivers = self._control({"op": "resolve", "session": session_id, "response": response})
        return receivers > (1 if self._listening else 0)

    def cancel(self, session_id: str, request_id: Any) -> None:
        """Kill the request here, or ask every other worker to."""
        if not self.inflight.cancel(session_id, request_id):
            self._control({"op": "cancel", "session": session_id, "request": request_id})

    def _control(self, command: dict[str, Any]) -> int:
        """Publish a command on the control channel; return how many workers heard it."""
        with self._redis():
            return int(self.client.publish(CONTROL_CHANNEL, dumps({**command, "origin": self.worker_id})))

    # operations
    def ready(self) -> bool:
        """True when the subscriber connection is up and Redis answers a PING."""
        self.start()
        if not self._listening and not self._first_attempt.is_set():
            self._first_attempt.wait(self.settings.redis_timeout_s)
        if not self._listening:
            return False
        try:
            with self._redis():
                return bool(self.client.ping())
        except HubUnavailable:
            return False

    def shutdown(self) -> None:
        """End every stream on this worker; each lets go of its claim as it closes."""
        for subscription in list(self.local.values()):
            subscription.end("server shutting down")

    def stop(self) -> None:
        """Stop this worker's greenlets and close its connections (tests; a worker simply exits)."""
        for greenlet in (self._listener, self._refresher):
            if greenlet is not None:
                greenlet.kill(block=True, timeout=2)
        if self._client is not None:
            self._client.connection_pool.disconnect()

    # the subscriber greenlet
    def _listen_forever(self) -> None:
        """Read this worker's channel and the control channel; reconnect with backoff when Redis goes."""
        backoff = RECONNECT_MIN_S
        while True:
            pool = self.client.connection_pool
            connection = pool.connection_class(**pool.connection_kwargs)
            try:
                connection.connect()
                # Live events wait behind the catch-up from the replay log (_resync_all): one arriving first
                # would move a stream past what was published while nobody listened, and that would be skipped.
                for subscription in list(self.local.values()):
                    subscription.hold()
                connection.send_command("SUBSCRIBE", CONTROL_CHANNEL, WORKER_CHANNEL + self.worker_id)
                for _ in range(2):
                    connection.read_response()
                log.info("worker %s subscribed to Redis", self.worker_id)
                # Subscribed first, so a change made meanwhile is heard too (versions make hearing it twice harmless).
                self.registry_sync.load()
                self._listening = True
                self._first_attempt.set()
                backoff = RECONNECT_MIN_S
                # Anything published while we were not listening is in the replay log.
                gevent.spawn(self._resync_all)
                self._read(connection)
            except UNAVAILABLE as exc:
                if self._listening:
                    log.warning("lost the Redis subscriber connection (%s); reconnecting", type(exc).__name__)
            except Exception:
                log.exception("Redis subscriber failed; reconnecting")
            finally:
                self._listening = False
                self._first_attempt.set()
                connection.disconnect()
            gevent.sleep(backoff * (0.5 + random.random()))
            backoff = min(backoff * 2, RECONNECT_MAX_S)

    def _read(self, connection: Any) -> None:
        """Dispatch messages until the connection fails; ping when quiet to notice a silent Redis."""
        heard = time.monotonic()
        while True:
            if connection.can_read(timeout=LISTEN_PING_S):
                reply = connection.read_response()
                heard = time.monotonic()
                if isinstance(reply, list) and len(reply) == 3 and reply[0] == b"message":
                    self._dispatch(reply[1], reply[2])
            elif time.monotonic() - heard > LISTEN_DEAD_S:
                raise RedisTimeoutError("no answer from Redis on the subscriber connection")
            else:
                connection.send_command("PING")

    def _dispatch(self, channel: bytes, data: bytes) -> None:
        """Route one pub/sub message: an event or stream end for a local stream, or a control command."""
        if channel == CONTROL_CHANNEL.encode():
            self._obey(loads(data))
            return
        kind, session_id, stream, ident, payload = data.split(b"\n", 4)
        subscription = self.local.get((session_id.decode(), stream.decode() or None))
        if subscription is None:
            return
        if kind == b"m":
            subscription.offer(ident.decode(), payload)
        elif kind == b"e" and subscription.owner.endswith("|" + ident.decode()):
            self._drop(subscription, payload.decode())

    def _obey(self, command: dict[str, Any]) -> None:
        """Act on a control command from another worker."""
        op = command.get("op")
        if op == "closed":
            self._end_local(command["session"], "session closed")
            return
        if self.registry_sync.obey(command):
            return
        if command.get("origin") == self.worker_id:
            return
        if op == "resolve":
            self.pending.resolve(command["session"], command["response"])
        elif op == "cancel":
            self.inflight.cancel(command["session"], command["request"])

    # run-time registry changes (mcp_server/hub/registry_sync.py)
    def share_registry(self, registry: Any) -> None:
        """Take this worker's run-time registry changes to every worker of the fleet, and theirs to this one."""
        self.registry_sync.share(registry)

    def prepare(self) -> None:
        """Subscribe and load the fleet's run-time registry changes before serving (bounded; Redis may be down)."""
        self.start()
        if not self.registry_sync.loaded.wait(self.settings.redis_timeout_s * 2):
            log.warning("serving before the registry's run-time changes were loaded: Redis did not answer")

    def store(self) -> Any:
        """The context that turns Redis failures into HubUnavailable (for the hub's helpers)."""
        return self._redis()

    def run_script(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run one of the hub's Lua scripts (for the hub's helpers)."""
        return self._run(name, keys, args)

    def control(self, command: dict[str, Any]) -> int:
        """Publish a command on the control channel (for the hub's helpers)."""
        return self._control(command)

    # keeping claims fresh
    def _refresh_forever(self) -> None:
        """Every few seconds, keep this worker's streams' claims and their sessions alive."""
        # Well inside the session TTL too, so a session with a stream open never expires.
        interval = max(0.1, min(REFRESH_EVERY_S, self.settings.session_ttl_s / 3))
        while True:
            gevent.sleep(interval)
            try:
                self.renew_call_leases()
                self.refresh()
            except HubUnavailable:
                pass  # the subscriber greenlet logs the outage and resyncs when Redis returns
            except Exception:
                log.exception("refreshing stream claims failed")

    def refresh(self) -> None:
        """Refresh every local stream's claim and TTLs; end those whose session is gone or claimed elsewhere."""
        subscriptions = list(self.local.values())
        for start in range(0, len(subscriptions), REFRESH_BATCH):
            batch = subscriptions[start:start + REFRESH_BATCH]
            with self._redis():
                pipe = self.client.pipeline(transaction=False)
                for subscription in batch:
                    keys = session_keys(subscription.session_id, subscription.stream)
                    delivered = subscription.delivered if subscription.stream is None else None
                    self._run(
                        "refresh",
                        [keys["claim"], keys["session"], keys["replay"], keys["delivered"], SESSION_INDEX,
                         keys["detached"]],
                        [subscription.owner, milliseconds(ATTACH_TTL_S), milliseconds(self.settings.session_ttl_s),
                         delivered or "", subscription.session_id],
                        client=pipe,
                    )
                codes = pipe.execute()
            for subscription, code in zip(batch, codes, strict=True):
                if code == 0:
                    self._drop(subscription, "session closed")
                elif code == 3:
                    self._drop(subscription, "replaced by a newer stream")
                elif code == 2 and self.local.get(subscription.key) is subscription:
                    self._reclaim(subscription)

    def _reclaim(self, subscription: RedisSubscription) -> None:
        """Take back a claim that vanished (Redis restarted, or was away past the claim's TTL) and catch up."""
        claim = session_keys(subscription.session_id, subscription.stream)["claim"]
        with self._redis():
            self.client.set(claim, subscription.owner, px=milliseconds(ATTACH_TTL_S), nx=True)
        if self.local.get(subscription.key) is not subscription:
            self._detach(subscription)  # it closed while the claim was being re-taken: let go again
            return
        gevent.spawn(self._resync_quietly, subscription)

    def _resync_all(self) -> None:
        """After (re)subscribing, re-claim every local stream and queue what it missed meanwhile."""
        try:
            self.refresh()
        except HubUnavailable:
            pass  # the refresher tries again; every stream still catches up (and stops holding live events)
        except Exception:
            log.exception("refreshing stream claims failed")
        for subscription in list(self.local.values()):
            try:
                self._resync(subscription)
            except HubUnavailable:
                pass
            except Exception:
                log.exception("resynchronising the stream of session %s failed", subscription.session_id[:8])

    def _resync_quietly(self, subscription: RedisSubscription) -> None:
        """Catch one stream up, leaving outages to the subscriber greenlet to report."""
        try:
            self._resync(subscription)
        except HubUnavailable:
            pass

    def _resync(self, subscription: RedisSubscription) -> None:
        """Queue the replay entries a stream has not queued yet."""
        subscription.loaded.wait(self.settings.redis_timeout_s * 2)
        if self.local.get(subscription.key) is not subscription or not subscription.loaded.is_set():
            return
        ms, seq = subscription.last_queued
        start = f"({ms}-{seq}" if (ms, seq) != (0, 0) else "-"
        subscription.hold()
        try:
            with self._redis():
                raw = self.client.xrange(session_keys(subscription.session_id)["replay"], start, "+")
        except BaseException:
            subscription.fill([])
            raise
        subscription.fill(entries_of(raw, subscription.stream), bounded=True)

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
import secrets
import time
from typing import Any

import gevent
import redis
from gevent.event import Event
from redis.cluster import RedisCluster

from mcp_server.encoding import dumps
from mcp_server.hub.base import (
    SHARED_SECRET_BYTES,
    Hub,
    HubUnavailable,
    StreamConflict,
    join_event_id,
    split_event_id,
)
from mcp_server.hub.redis_batch import ScriptBatch
from mcp_server.hub.redis_call_slots import CallSlots
from mcp_server.hub.redis_claims import ATTACH_TTL_S, Claims
from mcp_server.hub.redis_codec import (
    DecodedSessions,
    entries_of,
    milliseconds,
    replay_position,
)
from mcp_server.hub.redis_commands import LeanCommands, lean_commands
from mcp_server.hub.redis_connection import OutageGuard, connect
from mcp_server.hub.redis_deliveries import PostedDeliveries
from mcp_server.hub.redis_keys import (
    CONTROL_CHANNEL,
    SECRET_PREFIX,
    SESSION_INDEX,
    WORKER_CHANNEL,
    delivery_key,
    session_keys,
)
from mcp_server.hub.redis_listener import Listener
from mcp_server.hub.redis_multiplex import Multiplexer
from mcp_server.hub.redis_scripts import SCRIPTS
from mcp_server.hub.redis_sessions import REFRESH_TTL_EVERY_S, Sessions
from mcp_server.hub.redis_subscription import RedisSubscription
from mcp_server.hub.redis_tasks import RedisTaskStore
from mcp_server.hub.redis_used_rounds import UsedRounds
from mcp_server.hub.registry_sync import RegistrySync
from mcp_server.hub.subscription import Subscription

__all__ = ["RedisHub", "RedisSubscription", "session_keys"]

log = logging.getLogger("mcp.hub")

# A delivery token outlives the last retry of its answer by this much.
DELIVERY_TOKEN_MARGIN_S = 5.0
# How many (session, stream) pairs the publish script's key names are kept for before they are all made again.
MAX_PUBLISH_KEYS = 10_000

# Forks this process has gone through: a hub checks it, not os.getpid() (a system call), on every command.
_forks = [0]
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))


class RedisHub(PostedDeliveries, Sessions, Listener, Claims, CallSlots, UsedRounds, Hub):
    """The hub for many workers and hosts."""

    # Answers published after this worker exits still reach their clients, from any other worker.
    outlives_worker = True

    def __init__(self, settings: Any) -> None:
        super().__init__(settings)
        self.local: dict[tuple[str, str | None], RedisSubscription] = {}
        self.worker_id = ""
        self._pid: int | None = None
        self._fork_seen = -1
        self._client: redis.Redis | None = None
        self._scripts: dict[str, Any] = {}
        self._lean: LeanCommands | Multiplexer | None = None
        self._listener: gevent.Greenlet | None = None
        self._refresher: gevent.Greenlet | None = None
        self._watcher: gevent.Greenlet | None = None  # with Sentinel: follows the master (redis_listener.py)
        self._listening = False
        self._first_attempt = Event()
        self._outage = OutageGuard()
        self._ttl_refreshed: dict[str, float] = {}
        self._decoded = DecodedSessions()
        self.registry_sync = RegistrySync(self)
        self.tasks = RedisTaskStore(self, int(settings.task_max_ttl_s * 1000))
        self._init_call_slots()
        self._init_posted_deliveries()
        # The publish and deliver scripts' fixed arguments, as the text Redis is sent (packing finds text among the
        # arguments it remembers; Redis reads every argument as text anyway). A delivery token is remembered past
        # the last retry, which may run up to a pool wait and a command timeout after its start.
        self._remember_ms_arg = str(milliseconds(settings.delivery_retry_s + 2 * settings.redis_timeout_s
                                             + DELIVERY_TOKEN_MARGIN_S))
        self._replay_max_arg = str(settings.replay_max)
        self._replay_max_bytes_arg = str(settings.replay_max_bytes)
        # The publish script's keys of each (session, stream) this worker published to lately (bounded).
        self._publish_keys: dict[tuple[str, str | None], tuple[str, ...]] = {}
        self._refresh_ttl_every_s = min(REFRESH_TTL_EVERY_S, settings.session_ttl_s / 10,
                                        settings.resume_window_s / 10 or REFRESH_TTL_EVERY_S)

    # lifecycle
    def start(self) -> None:
        """Connect lazily on first use (after gunicorn forks) and start the worker's greenlets."""
        if self._fork_seen != _forks[0]:
            self._reset_after_fork()
        if self._listener is None or self._listener.dead:
            self._listener = gevent.spawn(self._listen_forever)
        if self._refresher is None or self._refresher.dead:
            self._refresher = gevent.spawn(self._refresh_forever)
        if self.settings.redis_sentinels and (self._watcher is None or self._watcher.dead):
            self._watcher = gevent.spawn(self._follow_master_forever)

    def _reset_after_fork(self) -> None:
        """Forget everything a parent process owned: connections, streams, greenlets."""
        self._pid = os.getpid()
        self._fork_seen = _forks[0]
        # The pid makes a stream's owner readable in Redis (which process holds it); the token, unique.
        self.worker_id = f"{os.getpid()}-{secrets.token_hex(6)}"
        self.local = {}
        self._init_call_slots()
        self._listener = self._refresher = self._watcher = None
        self._subscriber = None
        self._master_moved = False
        self._listening = False
        self._first_attempt = Event()
        self.registry_sync.reset()
        self._client = None
        self._lean = None
        self._scripts = {}
        self._init_posted_deliveries()

    @property
    def client(self) -> redis.Redis | RedisCluster:
        """The command connection pool's client, created on first use (a cluster's asks a node for its slots)."""
        self.start()
        if self._client is None:
            client = connect(self.settings, "mcp-" + self.worker_id)
            self._scripts = {name: client.register_script(source) for name, source in SCRIPTS.items()}
            # The per-call commands' lean path, for a plain pool (None on Sentinel and Cluster: redis-py's path).
            self._lean = lean_commands(client)
            self._client = client
        return self._client

    def _redis(self) -> OutageGuard:
        """Turn connection failures into HubUnavailable, logging the outage once."""
        return self._outage

    def script_batch(self) -> ScriptBatch:
        """Script runs to queue and run together: one round trip per Redis server."""
        return ScriptBatch(self.client, self._scripts)

    def _run(self, name: str, keys: list[str], args: list[Any], client: Any = None, packed: bytes | None = None) -> Any:
        """Run one of the hub's Lua scripts (on the lean path unless it goes into a pipeline; packed: see evalsha)."""
        lean = self._lean_path()
        if client is None and lean is not None:
            before = self.releases_before_next_command() if self._releases else ()
            return lean.evalsha(self._scripts[name], keys, args, before, packed)
        return self._scripts[name](keys=keys, args=args, client=client)

    def command(self, *args: Any) -> Any:
        """Send one Redis command, on the lean path where the pool allows it (raw replies: bytes, int, None)."""
        lean = self._lean_path()
        if lean is not None:
            return lean.execute(*args, before=self.releases_before_next_command())
        return self.client.execute_command(*args)

    def post_command(self, *args: Any) -> None:
        """Send one command whose reply nobody needs: on the multiplexer, written before this greenlet goes on."""
        lean = self._lean_path()
        if lean is not None:
            lean.post([*self.releases_before_next_command(), args])
        else:
            self.client.execute_command(*args)

    def _lean_path(self) -> LeanCommands | Multiplexer | None:
        """The per-call commands' path of this process, creating the client on first use."""
        if self._fork_seen != _forks[0] or self._client is None:
            self.client  # noqa: B018  (starts the worker's greenlets, creates the client and its lean path)
        return self._lean

    # delivery
    def publish(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Append to the session's replay log and route to the worker holding that stream."""
        keys, args = self._publish_arguments(session_id, message, stream)
        with self._redis():
            position = self._run("publish", keys, args)
        return None if position is None else join_event_id(position.decode(), stream)

    def delivery_token(self) -> str:
        """A delivery's token, made as a call slot's: this worker's id and a number (no randomness per call)."""
        return self._new_slot_token()

    def publish_once(self, session_id: str, message: Any, stream: str | None, token: str) -> str | None:
        """Publish unless an attempt with this token already ran (its reply lost to a timeout, say)."""
        keys, args = self._publish_arguments(session_id, message, stream)
        with self._redis():
            position = self._run("deliver", [*keys, delivery_key(session_id, token)], [*args, self._remember_ms_arg])
        return None if position is None else join_event_id(position.decode(), stream)

    def _publish_arguments(self, session_id: str, message: Any,
                           stream: str | None) -> tuple[tuple[str, ...], list[Any]]:
        """The keys and arguments of the publish script for one message."""
        script_keys = self._publish_keys.get((session_id, stream))
        if script_keys is None:
            keys = session_keys(session_id, stream)
            script_keys = (keys["session"], keys["replay"], keys["claim"], keys["replay_sizes"], keys["replay_bytes"])
            if len(self._publish_keys) >= MAX_PUBLISH_KEYS:
                self._publish_keys.clear()
            self._publish_keys[session_id, stream] = script_keys
        return (script_keys, [dumps(message), self._replay_max_arg, session_id, stream or "", WORKER_CHANNEL,
                              self._replay_max_bytes_arg])

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
                    [keys["session"], keys["claim"], keys["replay"], keys["delivered"], keys["detached"],
                     keys["replay_sizes"], keys["replay_bytes"]],
                    [subscription.owner, "1" if exclusive else "0", after, milliseconds(ATTACH_TTL_S),
                     milliseconds(self.settings.session_ttl_s), session_id, WORKER_CHANNEL, self.worker_id,
                     stream or "", *self._claim_holder_alive(keys["claim"])],
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

    def tell_every_worker(self, message: dict[str, Any]) -> None:
        """Hand a notification to this worker's handler, then to every other worker's through the control channel."""
        self.hand_to_this_worker(message)
        self._control({"op": "tell", "message": message})

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
        for greenlet in (self._listener, self._refresher, self._watcher):
            if greenlet is not None:
                greenlet.kill(block=True, timeout=2)
        if self._lean is not None:
            self._lean.close()
        if self._client is not None:
            self._client.close()
    # run-time registry changes (mcp_server/hub/registry_sync.py)
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
        with self._redis():
            self.client.set(key, secrets.token_hex(SHARED_SECRET_BYTES), nx=True)
            value = self.client.get(key)
        return bytes.fromhex(value.decode() if isinstance(value, bytes) else value)

    def store(self) -> Any:
        """The context that turns Redis failures into HubUnavailable (for the hub's helpers)."""
        return self._redis()

    def run_script(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run one of the hub's Lua scripts (for the hub's helpers)."""
        return self._run(name, keys, args)

    def control(self, command: dict[str, Any]) -> int:
        """Publish a command on the control channel (for the hub's helpers)."""
        return self._control(command)

"""The Redis store's event log: publish, deliver (a token makes a retry append at most once), attach a stream
(redis_claims.py), and the sessions a broadcast reaches."""

from __future__ import annotations

import logging
import random
import secrets
import time
from collections.abc import Callable
from typing import Any

import gevent

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.event_ids import join_event_id
from flask_mcp_gevent.store.ports import EventLog
from flask_mcp_gevent.store.redis_claims import Claims
from flask_mcp_gevent.store.redis_codec import milliseconds
from flask_mcp_gevent.store.redis_keys import SESSION_INDEX, WORKER_CHANNEL, SessionKeys, delivery_key, session_keys
from flask_mcp_gevent.store.redis_link import RedisLink
from flask_mcp_gevent.subscription import Subscription

__all__ = ["RedisEvents"]

log = logging.getLogger("mcp.store")

# A delivery token outlives the last retry of its answer by this much.
DELIVERY_TOKEN_MARGIN_S = 5.0
# Retrying an acknowledged answer through an outage: the first wait between attempts, and the longest.
DELIVERY_BACKOFF_MIN_S = 0.1
DELIVERY_BACKOFF_MAX_S = 2.0
# Request ids are the client's: at most this much of one goes into a log line, escaped by repr().
MAX_LOGGED_ID_CHARS = 40


def answered(message: Any) -> str:
    """Name what an answer answers, for a log line: its request id (escaped and cut short), or a batch."""
    if isinstance(message, list):
        return f"a batch of {len(message)}"
    request_id = message.get("id") if isinstance(message, dict) else None
    return "request " + repr(request_id)[:MAX_LOGGED_ID_CHARS]


class RedisEvents(EventLog):
    """The fleet's event logs: a Redis Stream per session, routed to the worker whose stream is attached."""

    # Answers published after this worker exits still reach their clients, from any other worker.
    outlives_worker = True

    def __init__(self, link: RedisLink, settings: Any, claims: Claims, start: Callable[[], None]) -> None:
        self.link = link
        self.settings = settings
        self.claims = claims
        # Starts the worker's reader greenlet, which hands this worker's streams their events.
        self.start = start
        # The publish and deliver scripts' fixed arguments, made once. A delivery token is remembered past the last
        # retry, which may run up to a pool wait and a command timeout after its start.
        self.remember_ms_arg = str(milliseconds(settings.delivery_retry_s + 2 * settings.redis_timeout_s
                                                + DELIVERY_TOKEN_MARGIN_S))
        self._replay_max_arg = str(settings.replay_max)
        self._replay_max_bytes_arg = str(settings.replay_max_bytes)

    def publish(self, session_id: str, message: Any, stream: str | None = None, token: str | None = None) -> str | None:
        """Append to the session's replay log and route to the worker holding that stream; once per token, if given."""
        keys, args = self.publish_arguments(session_id, message, stream)
        if token is None:
            position = self.link.run("publish", keys, args)
        else:  # not again when an attempt with this token already ran (its reply lost to a timeout, say)
            position = self.link.run("deliver", [*keys, delivery_key(session_id, token)], [*args, self.remember_ms_arg])
        return None if position is None else join_event_id(position.decode(), stream)

    # Every attempt carries one token, so one that reached Redis although its reply was lost is not appended
    # again; past MCP_DELIVERY_RETRY_S the answer is logged as lost, never dropped without a trace.
    def deliver(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Publish an answer the client was promised, retrying with backoff through an outage."""
        token = secrets.token_hex(8)  # names one delivery among every delivery of the fleet
        started = time.monotonic()
        delay = DELIVERY_BACKOFF_MIN_S
        while True:
            try:
                event_id = self.publish(session_id, message, stream, token)
            except StoreUnavailable:
                remaining = started + self.settings.delivery_retry_s - time.monotonic()
                if remaining <= 0:
                    log.error("gave up storing the answer to %s of session %s: the session store stayed "
                              "unreachable for MCP_DELIVERY_RETRY_S (%g s); the client may never get it",
                              answered(message), session_id[:8], self.settings.delivery_retry_s)
                    return None
                gevent.sleep(min(remaining, delay * (0.5 + random.random())))
                delay = min(delay * 2, DELIVERY_BACKOFF_MAX_S)
                continue
            if delay > DELIVERY_BACKOFF_MIN_S:
                log.info("answer to %s of session %s stored after %.1f s of retries", answered(message),
                         session_id[:8], time.monotonic() - started)
            return event_id

    def publish_arguments(self, session_id: str, message: Any,
                          stream: str | None) -> tuple[SessionKeys, list[Any]]:
        """The keys and arguments of the publish script for one message."""
        return session_keys(session_id, stream), [dumps(message), self._replay_max_arg, session_id, stream or "",
                                                  WORKER_CHANNEL, self._replay_max_bytes_arg]

    def subscribe(self, session_id: str, last_event_id: str | None = None, *, exclusive: bool = False
                  ) -> Subscription:
        """Attach a stream, pre-loaded with what it missed since last_event_id (that of a request stream resumes it)."""
        self.start()
        return self.claims.attach(session_id, last_event_id, exclusive)

    def broadcast_session_ids(self) -> list[str]:
        """Every live session of the fleet, from the session index."""
        members = self.link.execute("ZRANGEBYSCORE", SESSION_INDEX, f"({milliseconds(time.time())}", "+inf")
        return [member.decode() for member in members]

    def shutdown(self) -> None:
        """End every stream on this worker; each lets go of its claim as it closes."""
        for subscription in list(self.claims.local.values()):
            subscription.end("server shutting down")

"""The Redis hub's publish, and legacy answers stored without waiting: their POST had its 202, nobody needs their id.

A failed attempt retries (deliver) in its own greenlet with the same token, never appending twice; the drain flushes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gevent
from gevent.event import Event

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.hub.base import HubUnavailable, join_event_id
from flask_mcp_gevent.hub.redis_codec import milliseconds
from flask_mcp_gevent.hub.redis_keys import WORKER_CHANNEL, delivery_key, session_keys
from flask_mcp_gevent.hub.redis_link import RedisLink

__all__ = ["Deliveries"]


# A delivery token outlives the last retry of its answer by this much.
DELIVERY_TOKEN_MARGIN_S = 5.0


class Deliveries:
    """RedisHub's publish and its answers stored without waiting: it sends through the hub's link."""

    def __init__(self, link: RedisLink, settings: Any, deliver: Callable[..., Any],
                 new_token: Callable[[], str]) -> None:
        self.link = link
        # The hub's deliver (retrying through an outage) and a delivery token's maker (the call slots').
        self.deliver = deliver
        self.new_token = new_token
        # The publish and deliver scripts' fixed arguments, made once. A delivery token is remembered past the last
        # retry, which may run up to a pool wait and a command timeout after its start.
        self.remember_ms_arg = str(milliseconds(settings.delivery_retry_s + 2 * settings.redis_timeout_s
                                                + DELIVERY_TOKEN_MARGIN_S))
        self._replay_max_arg = str(settings.replay_max)
        self._replay_max_bytes_arg = str(settings.replay_max_bytes)
        self.reset()

    def reset(self) -> None:
        """Nothing being stored yet (after a fork too: the parent's posts are not this process's)."""
        # Answers posted and not stored yet (nor given up on): the drain waits for them.
        self.unsettled = 0
        self._settled = Event()
        self._settled.set()

    def publish(self, session_id: str, message: Any, stream: str | None = None) -> str | None:
        """Append to the session's replay log and route to the worker holding that stream."""
        keys, args = self.publish_arguments(session_id, message, stream)
        with self.link.guard:
            position = self.link.run("publish", keys, args)
        return None if position is None else join_event_id(position.decode(), stream)

    def publish_once(self, session_id: str, message: Any, stream: str | None, token: str) -> str | None:
        """Publish unless an attempt with this token already ran (its reply lost to a timeout, say)."""
        keys, args = self.publish_arguments(session_id, message, stream)
        with self.link.guard:
            position = self.link.run("deliver", [*keys, delivery_key(session_id, token)],
                                     [*args, self.remember_ms_arg])
        return None if position is None else join_event_id(position.decode(), stream)

    def publish_arguments(self, session_id: str, message: Any,
                          stream: str | None) -> tuple[tuple[str, ...], list[Any]]:
        """The keys and arguments of the publish script for one message."""
        keys = session_keys(session_id, stream)
        script_keys = (keys["session"], keys["replay"], keys["claim"], keys["replay_sizes"], keys["replay_bytes"])
        return (script_keys, [dumps(message), self._replay_max_arg, session_id, stream or "", WORKER_CHANNEL,
                              self._replay_max_bytes_arg])

    def deliver_later(self, session_id: str, message: Any, stream: str | None = None) -> None:
        """Store an answer without waiting for Redis; a failed attempt is retried in a greenlet of its own."""
        token = self.new_token()
        # Encoded before it counts as in flight: an answer that cannot be encoded must not hold up the drain.
        keys, args = self.publish_arguments(session_id, message, stream)
        self.unsettled += 1
        self._settled.clear()

        def stored(error: BaseException | None) -> None:
            if error is None:
                self._settle_one()
            else:  # from the connection's reader (or whoever failed it): it must not wait, so a greenlet retries
                gevent.spawn(self._deliver_settling, session_id, message, stream, token)

        try:
            # The multiplexer writes it with this turn's other commands and its reader hears the reply;
            # redis-py's path stores it before returning.
            with self.link.guard:
                self.link.post_script("deliver", [*keys, delivery_key(session_id, token)],
                                      [*args, self.remember_ms_arg], stored)
        except HubUnavailable:
            self._deliver_settling(session_id, message, stream, token)

    def _deliver_settling(self, session_id: str, message: Any, stream: str | None, token: str) -> None:
        """Deliver with the posted attempt's token (retrying within MCP_DELIVERY_RETRY_S), then count it settled."""
        try:
            self.deliver(session_id, message, stream, token=token)
        finally:
            self._settle_one()

    def _settle_one(self) -> None:
        """One posted answer is stored (or given up on, and logged)."""
        self.unsettled -= 1
        if self.unsettled <= 0:
            self.unsettled = 0
            self._settled.set()

    def flush(self, timeout: float) -> None:
        """Wait up to timeout seconds for every posted answer to be stored (or given up on)."""
        if not self._settled.is_set():
            self._settled.wait(timeout)

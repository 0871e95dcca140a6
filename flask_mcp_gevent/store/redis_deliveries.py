"""The Redis hub's publish, and the store of one attempt of Store.deliver: a token makes a retry append at most once."""

from __future__ import annotations

from typing import Any

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.store.base import join_event_id
from flask_mcp_gevent.store.redis_codec import milliseconds
from flask_mcp_gevent.store.redis_keys import WORKER_CHANNEL, SessionKeys, delivery_key, session_keys
from flask_mcp_gevent.store.redis_link import RedisLink

__all__ = ["Deliveries"]


# A delivery token outlives the last retry of its answer by this much.
DELIVERY_TOKEN_MARGIN_S = 5.0


class Deliveries:
    """RedisStore's publish, once per token or not: it sends through the hub's link."""

    def __init__(self, link: RedisLink, settings: Any) -> None:
        self.link = link
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

    def publish_arguments(self, session_id: str, message: Any,
                          stream: str | None) -> tuple[SessionKeys, list[Any]]:
        """The keys and arguments of the publish script for one message."""
        return session_keys(session_id, stream), [dumps(message), self._replay_max_arg, session_id, stream or "",
                                                  WORKER_CHANNEL, self._replay_max_bytes_arg]

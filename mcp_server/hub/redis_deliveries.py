"""The Redis hub's answers stored without waiting: a legacy call's answer is written, and its greenlet goes on.

A legacy (HTTP+SSE) call's answer goes to the session's stream, not to its POST, which had its 202 already; so
nobody waits for the event id the store gives it. Its store is queued on the multiplexed connection (written by
the writer greenlet with the turn's other commands, the call slot's release ahead of it) and its reply is read by
the connection's reader.
An attempt that fails (Redis gone, or an error reply such as NOSCRIPT) starts deliver's retry loop in a greenlet
of its own, with the same token, so an attempt that ran although its reply was lost is not appended twice.
The worker's drain waits for what is still being stored (flush).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import gevent
from gevent.event import Event

from mcp_server.encoding import dumps
from mcp_server.hub.base import HubUnavailable
from mcp_server.hub.redis_keys import delivery_key
from mcp_server.hub.redis_multiplex import Multiplexer
from mcp_server.hub.redis_resp import pack_arguments, pack_bytes, pack_unique

__all__ = ["PostedDeliveries"]


# Streams whose deliver command this worker keeps packed (forgotten all at once when full).
MAX_DELIVER_COMMANDS = 10_000


class DeliverCommand(NamedTuple):
    """A stream's deliver script in RESP, but for the token's key and the message between head and tail."""

    head: bytes  # EVALSHA, the script, its key count, the publish script's keys
    token_key: str  # the token's key without the token (the script's last key)
    tail: bytes  # the arguments after the message


class PostedDeliveries:
    """RedisHub's deliver_later and flush (a mixin: it uses the hub's command path, scripts and deliver)."""

    def _init_posted_deliveries(self) -> None:
        """Nothing being stored yet (after a fork too: the parent's posts are not this process's)."""
        self._deliver_commands: dict[tuple[str, str | None], DeliverCommand] = {}
        self._unsettled = 0
        self._settled = Event()
        self._settled.set()

    def deliver_later(self, session_id: str, message: Any, stream: str | None = None) -> None:
        """Store an answer without waiting for Redis; a failed attempt is retried in a greenlet of its own."""
        lean = self._lean_path()
        if lean is None:  # Sentinel, Cluster: redis-py's path, which waits
            self.deliver(session_id, message, stream)
            return
        token = self.delivery_token()
        # Encoded before it counts as in flight: an answer that cannot be encoded must not hold up the drain.
        packed_message = pack_bytes(dumps(message)) if isinstance(lean, Multiplexer) else b""
        self._unsettled += 1
        self._settled.clear()

        def stored(error: BaseException | None) -> None:
            if error is None:
                self._settle_one()
            else:  # from the connection's reader (or whoever failed it): it must not wait, so a greenlet retries
                gevent.spawn(self._deliver_settling, session_id, message, stream, token)

        try:
            with self._outage:
                if packed_message:  # on the multiplexer: packed but for the token and the message, once per stream
                    command = (self._deliver_commands.get((session_id, stream))
                               or self._deliver_command(lean, session_id, stream))
                    before = self.packed_release_before_next_command() if self._releases else b""
                    lean.post_script(before + command.head + pack_unique(command.token_key + token) + packed_message
                                     + command.tail, 2 if before else 1, stored)
                else:
                    keys, args = self._publish_arguments(session_id, message, stream)
                    # The token's key as bytes: packing does not remember it (it never comes back).
                    lean.post_evalsha(self._scripts["deliver"], [*keys, delivery_key(session_id, token).encode()],
                                      [*args, self._remember_ms_arg], self.releases_before_next_command(), stored)
        except HubUnavailable:
            self._deliver_settling(session_id, message, stream, token)

    def _deliver_command(self, lean: Multiplexer, session_id: str, stream: str | None) -> DeliverCommand:
        """The deliver script's command for a stream, in RESP around the token's key and the message (kept)."""
        keys, args = self._publish_arguments(session_id, None, stream)
        fixed = [*args[1:], self._remember_ms_arg]  # after the message
        command = DeliverCommand(lean.evalsha_prefix(self._scripts["deliver"], list(keys), 1 + len(fixed), 1),
                                 delivery_key(session_id, ""), pack_arguments(fixed))
        if len(self._deliver_commands) >= MAX_DELIVER_COMMANDS:
            self._deliver_commands.clear()
        self._deliver_commands[session_id, stream] = command
        return command

    def _deliver_settling(self, session_id: str, message: Any, stream: str | None, token: str) -> None:
        """Deliver with the posted attempt's token (retrying within MCP_DELIVERY_RETRY_S), then count it settled."""
        try:
            self.deliver(session_id, message, stream, token=token)
        finally:
            self._settle_one()

    def _settle_one(self) -> None:
        """One posted answer is stored (or given up on, and logged)."""
        self._unsettled -= 1
        if self._unsettled <= 0:
            self._unsettled = 0
            self._settled.set()

    def flush(self, timeout: float) -> None:
        """Wait up to timeout seconds for every posted answer to be stored (or given up on)."""
        if not self._settled.is_set():
            self._settled.wait(timeout)

    def posted_in_flight(self) -> int:
        """How many posted answers are not stored yet (for tests)."""
        return self._unsettled

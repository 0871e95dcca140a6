"""The Redis store's key and channel names, with Redis Cluster hash tags: the keys one script touches share a slot."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CONTROL_CHANNEL", "FLEET", "PREFIX", "REGISTRY_STATE", "REGISTRY_VERSION", "SECRET_PREFIX", "SESSION_INDEX",
           "SESSION_KEYS_LUA", "WORKER_CHANNEL", "SessionKeys", "call_slots_key", "delivery_key", "owner_key",
           "session_base", "session_keys", "used_rounds_key"]

PREFIX = "mcp:"
CONTROL_CHANNEL = PREFIX + "control"
WORKER_CHANNEL = PREFIX + "worker:"
# Key names carry a Redis Cluster hash tag ({...}): every key one script touches is in one hash slot. A session's
# keys are tagged with its id; the fleet's own (the session index, the owners' sets, the registry) share {fleet}.
FLEET = PREFIX + "{fleet}:"
SESSION_INDEX = FLEET + "sessions"
# Run-time registry changes: the latest of each (kind, key) by its JSON [kind, key], and the last version given.
REGISTRY_STATE = FLEET + "registry"
REGISTRY_VERSION = FLEET + "registry:version"
# Where shared_secret keeps each secret (one key per command: no tag needed).
SECRET_PREFIX = PREFIX + "secret:"


def owner_key(owner: str) -> str:
    """The sorted set of the sessions one owner ("principal:<name>" or "address:<ip>") opened."""
    return FLEET + "owner:" + owner


def session_base(session_id: str) -> str:
    """Where every key of one session starts: its id is the hash tag (session ids are hex, never a brace)."""
    return PREFIX + "session:{" + session_id + "}"


def call_slots_key(session_id: str) -> str:
    """The sorted set of a session's running tool calls (lease tokens)."""
    return session_base(session_id) + ":calls"


def delivery_key(session_id: str, token: str) -> str:
    """Remembers that the delivery with this token ran, and what it returned (in the session's hash slot)."""
    return session_base(session_id) + ":delivery:" + token


class SessionKeys(NamedTuple):
    """The Redis keys that hold one session, in the order every session script takes them as its KEYS."""

    session: str  # the session's JSON
    replay: str  # its replay log (a Stream)
    replay_bytes: str  # the sum of the log's message lengths (the publish script keeps it)
    delivered: str  # the last event its own stream delivered
    detached: str  # set while the session waits out its resume window
    claim: str  # the worker and token holding a stream: the session's own, or a request stream


# The first line of every session script: names its KEYS as SessionKeys does (the deliver script's token key follows).
SESSION_KEYS_LUA = "local " + ", ".join(SessionKeys._fields) + " = unpack(KEYS)\n"


def session_keys(session_id: str, stream: str | None = None) -> SessionKeys:
    """The Redis keys that hold one session; the claim is that of its own stream, or of a request stream."""
    base = session_base(session_id)
    return SessionKeys(base, base + ":replay", base + ":replay:bytes", base + ":delivered", base + ":detached",
                       base + ":stream" + ("" if stream is None else ":" + stream))


def used_rounds_key(rounds_id: bytes) -> str:
    """Marks one multi-round request as consumed (ctx.consume_answers); one key per command, so no hash tag."""
    return PREFIX + "used-rounds:" + rounds_id.hex()

"""Run-time registry changes across a Redis fleet: versioned in Redis, applied and acknowledged by every worker.

A change names functions by reference (toolkit/registry.py); a worker loads every stored one each time it subscribes.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from typing import Any

import gevent
from gevent.event import Event
from gevent.queue import Empty, Queue

from flask_mcp_gevent.conditions import StoreUnavailable
from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.store.redis_codec import field_pairs
from flask_mcp_gevent.store.redis_keys import CONTROL_CHANNEL, REGISTRY_STATE, REGISTRY_VERSION
from flask_mcp_gevent.store.redis_link import RedisLink

__all__ = ["ACK_TIMEOUT_S", "RegistrySync"]

log = logging.getLogger("mcp.store")


# A worker that changed the registry waits this long for every worker to apply the change before it announces
# list_changed; one that does not answer in time (stopped, or gone) catches up when it next subscribes.
ACK_TIMEOUT_S = 5.0


class RegistrySync:
    """One worker's side of the fleet's run-time registry changes."""

    def __init__(self, link: RedisLink, control: Callable[[dict[str, Any]], int]) -> None:
        self.link = link
        # The fleet bus's control: publish a command to every worker, and how many heard it.
        self.control = control
        self.registry: Any = None
        self.reset()

    def reset(self) -> None:
        """Forget what a parent process was waiting for (after a fork); the registry stays."""
        # Each change this worker made and waits on: the acknowledgments of the workers that applied it, as they come.
        self.acks: dict[str, Queue] = {}
        self.loaded = Event()

    def share(self, registry: Any) -> None:
        """Replicate this registry's run-time changes, and apply the fleet's to it."""
        self.registry = registry
        registry.replicator = self.replicate

    def replicate(self, change: dict[str, Any]) -> int:
        """Record a change in Redis, tell every worker, and wait for each to apply it; return its version."""
        change_id = secrets.token_hex(8)
        acks = self.acks[change_id] = Queue()
        try:
            version, heard = self.link.run(
                "registry", [REGISTRY_STATE, REGISTRY_VERSION],
                [dumps([change["kind"], change["key"]]), dumps(change), CONTROL_CHANNEL, self.link.worker_id,
                 change_id],
            )
            applied: set[str] = set()
            deadline = time.monotonic() + ACK_TIMEOUT_S
            try:
                while len(applied) < int(heard):  # PUBLISH counted every worker that heard it, this one included
                    applied.add(acks.get(timeout=max(0.0, deadline - time.monotonic())))
            except Empty:
                log.warning("%s %s %s: %d of %d workers applied it within %g s; announcing it anyway",
                            change["action"], change["kind"], change["key"], len(applied), heard, ACK_TIMEOUT_S)
            return int(version)
        finally:
            self.acks.pop(change_id, None)

    def load(self) -> None:
        """Apply every change the fleet made, oldest first; Redis errors propagate (the caller reconnects)."""
        if self.registry is not None:
            entries = []
            for _, raw in field_pairs(self.link.execute("HGETALL", REGISTRY_STATE)):
                try:
                    entry = loads(raw)
                    entries.append((int(entry["version"]), entry["change"]))
                except (ValueError, KeyError, TypeError):
                    log.warning("ignored an unreadable run-time registry change in %s", REGISTRY_STATE)
            for version, change in sorted(entries, key=lambda entry: entry[0]):
                self.apply_quietly(change, version)
        self.loaded.set()

    def obey(self, command: dict[str, Any]) -> bool:
        """Act on a control command about the registry; False when it is about something else."""
        op = command.get("op")
        if op == "registry":
            # The worker that made the change has it already; it acknowledges too, since PUBLISH counted it.
            if command.get("origin") != self.link.worker_id and self.registry is not None:
                self.apply_quietly(command["change"], command["version"])
            gevent.spawn(self.acknowledge, command["id"])  # the reader must never wait on Redis
            return True
        if op == "registry-ack":
            ack_id = command.get("id")
            acks = self.acks.get(ack_id) if isinstance(ack_id, str) else None
            if acks is not None:
                acks.put(command["worker"])
            return True
        return False

    def apply_quietly(self, change: dict[str, Any], version: int) -> None:
        """Apply one change, logging one that cannot be made here (say, a module this host lacks)."""
        try:
            self.registry.apply(change, version)
        except Exception:
            log.exception("could not apply the run-time change %s %s %s here", change.get("action"),
                          change.get("kind"), change.get("key"))

    def acknowledge(self, change_id: str) -> None:
        """Tell the worker that made a change that this one has it."""
        try:
            self.control({"op": "registry-ack", "id": change_id, "worker": self.link.worker_id})
        except StoreUnavailable:
            pass  # that worker stops waiting at its timeout

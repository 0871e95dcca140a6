"""What the server cannot do when asked, as its store reports it: a store out of reach, a store or an owner holding
all it may, a stream already open.

A leaf of its own, so the transports that turn these into HTTP answers know the conditions and nothing of the store.
"""

from __future__ import annotations

__all__ = ["CapacityError", "QuotaFull", "StoreUnavailable", "StreamConflict"]


class CapacityError(RuntimeError):
    """The store holds as many sessions (or consumed requests) as it may."""


class QuotaFull(CapacityError):
    """The session's owner (a principal, or an anonymous client's address) holds as many sessions as it may."""


class StoreUnavailable(RuntimeError):
    """The store's backing service cannot be reached right now."""


class StreamConflict(RuntimeError):
    """The session already has a stream open and may not have a second one."""

"""Protocol versions: which we speak, how to negotiate, and what changed between them."""

from __future__ import annotations

__all__ = [
    "LATEST",
    "SUPPORTED",
    "allows_batches",
    "at_least",
    "negotiate",
]

SUPPORTED = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST = SUPPORTED[-1]


def negotiate(requested: object) -> str:
    """Echo a version we support, otherwise answer with the latest one."""
    return requested if isinstance(requested, str) and requested in SUPPORTED else LATEST


def at_least(version: str | None, floor: str) -> bool:
    """True when version is floor or newer (dates compare as strings)."""
    return version is not None and version >= floor


def allows_batches(version: str | None) -> bool:
    """JSON-RPC batches exist only in 2025-03-26: added then, removed in 2025-06-18."""
    return version == "2025-03-26"

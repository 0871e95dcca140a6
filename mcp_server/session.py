"""Session: what the server remembers about one client connection between messages."""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Session", "new_session_id"]

SSE = "sse"
STREAMABLE = "streamable"
STDIO = "stdio"


def new_session_id() -> str:
    """Return a fresh session id: 128 random bits as 32 hex characters (visible ASCII)."""
    return secrets.token_hex(16)


@dataclass
class Session:
    """One client's state; the hub stores it and every worker can load it."""

    id: str = field(default_factory=new_session_id)
    transport: str = SSE
    principal: str | None = None
    protocol_version: str | None = None
    client_info: dict[str, Any] = field(default_factory=dict)
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    initialized: bool = False
    log_level: str | None = None
    subscriptions: list[str] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)

    @property
    def negotiated(self) -> bool:
        """True once initialize has been answered."""
        return self.protocol_version is not None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready copy for storage."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Session:
        """Rebuild a session from storage, ignoring fields it no longer has."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

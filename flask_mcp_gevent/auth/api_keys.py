"""API keys (static bearer tokens): a JSON file maps each key's SHA-256 to a principal and its permissions.

    {"<sha256 hex of the key>": {"principal": "alice", "tools": ["*"], "resources": [], "prompts": ["greet"]}}

Keys are never stored in clear, and a presented key is compared against every
stored hash in constant time. A plain SHA-256 is enough because keys are 256
random bits (new_key), not passwords: there is nothing to guess.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from flask_mcp_gevent.auth.permissions import Grants
from flask_mcp_gevent.auth.principal import API_KEY, LOADER_PREFIX, OAUTH_PREFIX, Principal
from flask_mcp_gevent.config import ConfigError

__all__ = ["ApiKeyStore", "hash_key", "new_key", "principal_of_entry"]

KEY_PREFIX = "mcp_"
HASH_PATTERN = re.compile(r"[0-9a-f]{64}")  # matched whole
# Matched whole (fullmatch): "$" would also take a name ending in a newline.
PRINCIPAL_PATTERN = re.compile(r"[A-Za-z0-9._@+-][A-Za-z0-9._@:+-]{0,127}")
KNOWN_FIELDS = {"principal", "tools", "resources", "prompts", "description"}
# What each entry must say: its name, and what it grants (an empty list grants nothing of that kind).
REQUIRED_FIELDS = ("principal", "tools", "resources", "prompts")


def new_key() -> str:
    """Return a fresh API key: 256 random bits, URL-safe, with a recognisable prefix."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """Return the SHA-256 hex digest under which a key is stored."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def read_patterns(entry: Mapping[str, Any], field: str, where: str) -> tuple[str, ...]:
    """Read one list of glob patterns from a key entry; absent means none."""
    value = entry.get(field, [])
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise ConfigError(f"{where}: '{field}' must be a list of glob patterns such as [\"add\", \"get_*\"]")
    return tuple(value)


def principal_of_entry(entry: Any, label: str, via: str, *, complete: bool = False) -> Principal:
    """Check one entry ({principal, tools, resources, prompts}) and return its Principal; ConfigError if wrong.

    complete: every field of REQUIRED_FIELDS must be there (a principal loader's answer), so a grant left out by
    mistake is named rather than read as "nothing".
    """
    if not isinstance(entry, dict):
        raise ConfigError(f"{label}: each entry must be an object with a 'principal'")
    unknown = set(entry) - KNOWN_FIELDS
    if unknown:
        raise ConfigError(f"{label}: unknown field(s) {', '.join(sorted(unknown))}; the fields are "
                          f"{', '.join(REQUIRED_FIELDS)} and description")
    missing = [name for name in REQUIRED_FIELDS if name not in entry] if complete else []
    if missing:
        raise ConfigError(f"{label}: missing field(s) {', '.join(missing)}; give each one (an empty list grants "
                          "nothing of that kind)")
    name = entry.get("principal")
    if (not isinstance(name, str) or not PRINCIPAL_PATTERN.fullmatch(name)
            or name.startswith((OAUTH_PREFIX, LOADER_PREFIX))):
        raise ConfigError(
            f"{label}: 'principal' must be 1-128 characters of letters, digits and ._@:+- "
            f"(and not start with '{OAUTH_PREFIX}' or '{LOADER_PREFIX}', which name token subjects and a host app's "
            "users)"
        )
    grants = Grants(
        tools=read_patterns(entry, "tools", label),
        resources=read_patterns(entry, "resources", label),
        prompts=read_patterns(entry, "prompts", label),
    )
    return Principal(name=name, grants=grants, via=via)


class ApiKeyStore:
    """The hashed keys of MCP_API_KEYS_FILE, with each key's principal and grants."""

    def __init__(self, entries: Iterable[tuple[str, Principal]]) -> None:
        self.entries = [(digest.encode("ascii"), principal) for digest, principal in entries]

    @classmethod
    def load(cls, path: str) -> ApiKeyStore:
        """Read and check a keys file; raise ConfigError saying what is wrong with it."""
        try:
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError:
            raise ConfigError(f"MCP_API_KEYS_FILE: cannot read {path}") from None
        except ValueError:
            raise ConfigError(f"MCP_API_KEYS_FILE: {path} is not valid JSON") from None
        return cls.from_mapping(document, where=f"MCP_API_KEYS_FILE {path}")

    @classmethod
    def from_mapping(cls, document: Any, where: str = "API keys") -> ApiKeyStore:
        """Build a store from the decoded file: sha256 hex -> {principal, tools, resources, prompts}."""
        if not isinstance(document, dict) or not document:
            raise ConfigError(f"{where}: expected a JSON object mapping key hashes to principals")
        entries = []
        for number, (digest, entry) in enumerate(document.items(), start=1):
            if not HASH_PATTERN.fullmatch(digest):
                # Named by its place, not its text: what stands there may be a key itself, which no line may show.
                raise ConfigError(
                    f"{where}, entry {number}: keys of the file must be SHA-256 hex digests (64 lowercase hex "
                    "characters), never an API key itself; run scripts/new_api_key.py to make a key and its line"
                )
            entries.append((digest, principal_of_entry(entry, f"{where}, entry {digest[:12]}…", API_KEY)))
        return cls(entries)

    def authenticate(self, key: str) -> Principal | None:
        """Return the principal of a presented key, with that key's own grants, or None; every stored hash is
        compared, in constant time."""
        presented = hash_key(key).encode("ascii")
        found = None
        for digest, principal in self.entries:
            # No early exit: the time taken does not depend on which entry (if any) matched.
            if hmac.compare_digest(presented, digest):
                found = principal
        return found

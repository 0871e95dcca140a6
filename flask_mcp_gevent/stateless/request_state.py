"""`requestState` for multi round-trip requests: sealed so a client can neither forge, read nor move it.

A state is AES-256-GCM ciphertext (the `cryptography` package) of a small JSON payload: who it was minted for
(principal), for what (method, target: tool or prompt name or resource URI, and a digest of the arguments), until
when, the tool's own state and the input responses collected in earlier rounds. The token names its key by an id,
so keys rotate: the first key mints, every listed key verifies. A token is not single-use by itself. Every state of
one multi-round request carries the same random request id (minted with its first state); a tool whose last round
must not run twice calls ctx.consume_answers(), which records that id in the store, and from then on every state
carrying it is refused (stateless/input_rounds.py).

The key comes from MCP_REQUEST_STATE_KEY, else from the Redis store (one random key shared with `SET NX`, passed in
as bytes), else a random key per process, which only that process can verify.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from flask_mcp_gevent.config import ConfigError, Settings
from flask_mcp_gevent.errors import INVALID_PARAMS, RpcError

__all__ = [
    "MIN_KEY_BYTES",
    "RequestState",
    "RequestStateCodec",
    "RequestStateError",
    "RequestStateTooLarge",
    "SharedCodec",
    "arguments_digest",
    "codec_from_settings",
    "new_shared_key",
    "parse_keys",
    "target_of",
]

MIN_KEY_BYTES = 32
VERSION = "s1"
NONCE_BYTES = 12
ROUNDS_ID_BYTES = 16
KEY_ID_BYTES = 6
# Where each MRTR-capable method names its target.
TARGET_FIELDS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
HEX = re.compile(r"(?:[0-9a-fA-F]{2})+")


class RequestStateError(RpcError):
    """A requestState that fails a check: -32602 whose message says which, never anything secret."""

    def __init__(self, reason: str, message: str) -> None:
        """Build the error; reason is a stable word for clients and logs."""
        super().__init__(INVALID_PARAMS, f"Invalid requestState: {message}", {"reason": reason})
        self.reason = reason


class RequestStateTooLarge(ValueError):
    """A state the server was about to mint is over MCP_REQUEST_STATE_MAX_BYTES."""


@dataclass(frozen=True)
class RequestState:
    """What a verified requestState carries back: the tool's state, earlier answers and its expiry."""

    tool_state: Any = None
    answers: dict[str, Any] = field(default_factory=dict)
    expires_at: float = 0.0
    # The request's id, the same in the state of each of its rounds: what ctx.consume_answers records as used.
    rounds_id: bytes = b""


def new_shared_key() -> bytes:
    """Return a fresh random key (for the store to store once, with SET NX, and every worker to use)."""
    return secrets.token_bytes(MIN_KEY_BYTES)


def parse_keys(raw: str) -> list[bytes]:
    """Read MCP_REQUEST_STATE_KEY: comma-separated hex or base64 keys of at least 32 bytes, newest first."""
    keys = []
    for position, text in enumerate(part.strip() for part in raw.split(",") if part.strip()):
        key = decode_key(text)
        if key is None or len(key) < MIN_KEY_BYTES:
            # Never echo the value: it is a secret.
            raise ConfigError(f"MCP_REQUEST_STATE_KEY: key {position + 1} must be hex or base64 of at least "
                              f"{MIN_KEY_BYTES} bytes (e.g. the output of `openssl rand -hex 32`)")
        keys.append(key)
    return keys


def decode_key(text: str) -> bytes | None:
    """Decode one key written as hex, else as (standard or URL-safe) base64; None when it is neither."""
    if HEX.fullmatch(text):
        return bytes.fromhex(text)
    try:
        return base64.b64decode(text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def canonical_json(value: Any) -> bytes:
    """Encode a JSON value the same way whoever re-serialized it: sorted keys, integral floats as integers."""
    return json.dumps(normalized(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def normalized(value: Any) -> Any:
    """Turn floats that are whole numbers into ints (a JavaScript client sends 1.0 back as 1)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: normalized(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normalized(item) for item in value]
    return value


def arguments_digest(arguments: Any) -> str:
    """SHA-256 of the canonical JSON of a request's arguments (absent arguments count as {})."""
    return hashlib.sha256(canonical_json({} if arguments is None else arguments)).hexdigest()


def target_of(method: str, params: dict[str, Any]) -> str:
    """The tool name, prompt name or resource URI a request is about ("" when it has none)."""
    value = params.get(TARGET_FIELDS.get(method, ""))
    return value if isinstance(value, str) else ""


class RequestStateCodec:
    """Mints and verifies requestState tokens with a key ring: keys[0] mints, every key verifies."""

    def __init__(self, keys: Sequence[bytes], ttl_s: float = 600.0, max_bytes: int = 65536,
                 clock: Callable[[], float] = time.time) -> None:
        """Derive one AES-256-GCM key and one key id per key; clock is injectable for tests."""
        if not keys:
            raise ValueError("RequestStateCodec needs at least one key")
        self.ring = [derived(key) for key in keys]
        self.by_id = {key_id: aead for key_id, aead in self.ring}
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        self.clock = clock

    @property
    def key_id(self) -> str:
        """The id of the key that mints (safe to log: it is derived one-way from the key)."""
        return self.ring[0][0]

    def mint(self, principal: str | None, method: str, params: dict[str, Any], tool_state: Any = None,
             answers: dict[str, Any] | None = None, rounds_id: bytes | None = None) -> str:
        """Seal a state for this principal and request (its params as sent); RequestStateTooLarge when too large.

        rounds_id: the id of the request's earlier states (None: a new request, so a new random id).
        """
        payload = {
            "p": principal or "", "m": method, "t": target_of(method, params),
            "d": arguments_digest(params.get("arguments")), "e": round(self.clock() + self.ttl_s, 3),
            "s": tool_state, "a": answers or {}, "r": (rounds_id or secrets.token_bytes(ROUNDS_ID_BYTES)).hex(),
        }
        key_id, aead = self.ring[0]
        nonce = os.urandom(NONCE_BYTES)
        sealed = aead.encrypt(nonce, canonical_json(payload), associated_data(key_id))
        token = f"{VERSION}.{key_id}.{base64.urlsafe_b64encode(nonce + sealed).rstrip(b'=').decode('ascii')}"
        if len(token) > self.max_bytes:
            raise RequestStateTooLarge(f"requestState would be {len(token)} bytes, over the {self.max_bytes}-byte "
                                       "limit: keep less tool state, or put it in a store and carry its id")
        return token

    def verify(self, token: object, principal: str | None, method: str, params: dict[str, Any]) -> RequestState:
        """Open a state the client echoed and check every binding; raise RequestStateError on the first failure."""
        payload, sealed = self.unseal(token)
        if not isinstance(payload.get("e"), (int, float)) or self.clock() > payload["e"]:
            raise RequestStateError("expired", "it has expired; start the request again without requestState")
        checks = (
            ("p", principal or "", "principal", "it was issued to another principal"),
            ("m", method, "method", "it was issued for another method"),
            ("t", target_of(method, params), "target", "it was issued for another tool, prompt or resource"),
            ("d", arguments_digest(params.get("arguments")), "arguments", "it was issued for other arguments"),
        )
        for key, expected, reason, text in checks:
            if not hmac.compare_digest(str(payload.get(key, "")).encode(), str(expected).encode()):
                raise RequestStateError(reason, text)
        answers = payload.get("a")
        if not isinstance(answers, dict):
            answers = {}
        return RequestState(payload.get("s"), answers, float(payload["e"]), rounds_id_of(payload, sealed))

    def unseal(self, token: object) -> tuple[dict[str, Any], bytes]:
        """Decrypt a token: its payload and sealed bytes; refuse what is too large, malformed, unknown or altered."""
        if not isinstance(token, str):
            raise RequestStateError("malformed", "it must be the string the server sent")
        if len(token) > self.max_bytes:
            raise RequestStateError("too_large", f"it is over the {self.max_bytes}-byte limit")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != VERSION:
            raise RequestStateError("malformed", "it is not a state this server issued; echo it exactly")
        aead = self.by_id.get(parts[1])
        if aead is None:
            raise RequestStateError("unknown_key", "its key is unknown here (rotated out, or another server's)")
        try:
            raw = base64.urlsafe_b64decode(parts[2] + "=" * (-len(parts[2]) % 4))
            payload = json.loads(aead.decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], associated_data(parts[1])))
        except (binascii.Error, ValueError, InvalidTag):
            raise RequestStateError("tampered", "it failed its integrity check; echo it exactly") from None
        if not isinstance(payload, dict):
            raise RequestStateError("tampered", "it failed its integrity check; echo it exactly")
        return payload, raw


def rounds_id_of(payload: dict[str, Any], sealed: bytes) -> bytes:
    """The request id a state carries; one minted before ids existed is named by a digest of its sealed bytes."""
    value = payload.get("r")
    if isinstance(value, str) and len(value) == 2 * ROUNDS_ID_BYTES and HEX.fullmatch(value):
        return bytes.fromhex(value)
    return hashlib.sha256(sealed).digest()[:ROUNDS_ID_BYTES]


def derived(key: bytes) -> tuple[str, AESGCM]:
    """Derive (key id, AES-256-GCM cipher) from one key, with separate HKDF labels so the id reveals nothing."""
    key_id = base64.urlsafe_b64encode(expand(key, b"mcp requestState key id v1", KEY_ID_BYTES)).decode("ascii")
    return key_id, AESGCM(expand(key, b"mcp requestState aes-256-gcm v1", 32))


def expand(key: bytes, label: bytes, length: int) -> bytes:
    """HKDF-SHA256 of key under one label."""
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=label).derive(key)


def associated_data(key_id: str) -> bytes:
    """Bind the format version and key id to the ciphertext."""
    return f"mcp-request-state/{VERSION}/{key_id}".encode("ascii")


def codec_from_settings(settings: Settings, shared_key: bytes | None = None,
                        clock: Callable[[], float] = time.time) -> RequestStateCodec:
    """Build the codec from MCP_REQUEST_STATE_KEY, else the store's shared key, else a random per-process key."""
    keys = parse_keys(settings.request_state_key) if settings.request_state_key else []
    if not keys:
        keys = [shared_key] if shared_key else [new_shared_key()]
    return RequestStateCodec(keys, settings.request_state_ttl_s, settings.request_state_max_bytes, clock)


# The name under which the store shares the requestState key between workers and hosts.
SHARED_KEY_NAME = "request-state"


class SharedCodec:
    """The process's codec, built on first use: without MCP_REQUEST_STATE_KEY its key comes from the store.

    The store call (Redis: one SET NX and GET) happens once per worker, after the fork, and again only if it failed.
    """

    def __init__(self, settings: Settings, shared_secret: Callable[[str], bytes]) -> None:
        """Keep what building needs; nothing is read yet."""
        self.settings = settings
        self.shared_secret = shared_secret
        self._codec: RequestStateCodec | None = None
        self._pid: int | None = None

    def __call__(self) -> RequestStateCodec:
        """Return the codec, building it in this process the first time."""
        if self._codec is None or self._pid != os.getpid():
            shared = None if self.settings.request_state_key else self.shared_secret(SHARED_KEY_NAME)
            self._codec = codec_from_settings(self.settings, shared)
            self._pid = os.getpid()
        return self._codec

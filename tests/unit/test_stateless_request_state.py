"""stateless.request_state: a requestState opens only for its principal, method, target and arguments, in time."""

from __future__ import annotations

import base64

import pytest

from flask_mcp_gevent.config import ConfigError, Settings
from flask_mcp_gevent.stateless.request_state import (
    RequestStateCodec,
    RequestStateError,
    arguments_digest,
    codec_from_settings,
    new_shared_key,
    parse_keys,
)

KEY = bytes(range(32))
PARAMS = {"name": "book_trip", "arguments": {"city": "Oslo", "nights": 2}, "_meta": {"x": 1}}


class Clock:
    """A settable clock."""

    def __init__(self) -> None:
        """Start at a fixed time."""
        self.now = 1_000_000.0

    def __call__(self) -> float:
        """Return the current time."""
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def codec(clock):
    return RequestStateCodec([KEY], ttl_s=60, clock=clock)


def refusal(codec, token, principal="alice", method="tools/call", params=PARAMS):
    """The reason verify gives for refusing token."""
    with pytest.raises(RequestStateError) as raised:
        codec.verify(token, principal, method, params)
    assert raised.value.code == -32602
    assert raised.value.to_dict()["data"] == {"reason": raised.value.reason}
    return raised.value.reason


def test_a_state_round_trips_with_tool_state_and_answers(codec, clock):
    token = codec.mint("alice", "tools/call", PARAMS, {"step": 2, "cart": ["a"]}, {"user_name": {"action": "accept"}})
    retry = {**PARAMS, "inputResponses": {"confirm": {"action": "accept"}}, "requestState": token, "_meta": {}}
    state = codec.verify(token, "alice", "tools/call", retry)
    assert state.tool_state == {"step": 2, "cart": ["a"]}
    assert state.answers == {"user_name": {"action": "accept"}}
    assert state.expires_at == clock.now + 60


def test_every_round_of_a_request_carries_its_id_and_a_new_request_gets_a_new_one(codec):
    first = codec.verify(codec.mint("alice", "tools/call", PARAMS), "alice", "tools/call", PARAMS)
    later = codec.mint("alice", "tools/call", PARAMS, rounds_id=first.rounds_id)
    assert codec.verify(later, "alice", "tools/call", PARAMS).rounds_id == first.rounds_id
    other = codec.verify(codec.mint("alice", "tools/call", PARAMS), "alice", "tools/call", PARAMS)
    assert len(first.rounds_id) == 16 and other.rounds_id != first.rounds_id


def test_the_token_reveals_nothing_it_carries(codec):
    token = codec.mint("alice", "tools/call", PARAMS, {"secret": "hunter2"})
    body = base64.urlsafe_b64decode(token.split(".")[2] + "==")
    assert b"hunter2" not in body and b"alice" not in body and b"Oslo" not in body


def test_another_principal_cannot_use_it(codec):
    assert refusal(codec, codec.mint("alice", "tools/call", PARAMS), principal="mallory") == "principal"
    assert refusal(codec, codec.mint("alice", "tools/call", PARAMS), principal=None) == "principal"


def test_another_tool_or_method_cannot_use_it(codec):
    token = codec.mint("alice", "tools/call", PARAMS)
    assert refusal(codec, token, params={**PARAMS, "name": "delete_all"}) == "target"
    assert refusal(codec, token, method="prompts/get") == "method"
    resource = codec.mint("alice", "resources/read", {"uri": "test://a"})
    assert refusal(codec, resource, method="resources/read", params={"uri": "test://b"}) == "target"


def test_other_arguments_cannot_use_it(codec):
    token = codec.mint("alice", "tools/call", PARAMS)
    assert refusal(codec, token, params={**PARAMS, "arguments": {"city": "Oslo", "nights": 20}}) == "arguments"


def test_an_expired_state_is_refused(codec, clock):
    token = codec.mint("alice", "tools/call", PARAMS)
    clock.now += 60
    assert codec.verify(token, "alice", "tools/call", PARAMS)
    clock.now += 0.01
    assert refusal(codec, token) == "expired"


def test_any_altered_byte_is_refused(codec):
    token = codec.mint("alice", "tools/call", PARAMS, {"n": 1})
    assert refusal(codec, token + "-TAMPERED") == "tampered"
    head, key_id, body = token.split(".")
    for position in (0, len(body) // 2, len(body) - 2):
        flipped = body[:position] + ("A" if body[position] != "A" else "B") + body[position + 1:]
        assert refusal(codec, f"{head}.{key_id}.{flipped}") == "tampered"


@pytest.mark.parametrize("token", [None, 5, "", "garbage", "s2.abc.def", "s1.only-two"])
def test_malformed_states_are_refused(codec, token):
    assert refusal(codec, token) == "malformed"


def test_a_state_sealed_with_another_key_is_refused(clock):
    other = RequestStateCodec([new_shared_key()], clock=clock)
    assert refusal(RequestStateCodec([KEY], clock=clock), other.mint("alice", "tools/call", PARAMS)) == "unknown_key"


def test_keys_rotate_the_first_mints_every_one_verifies(clock):
    new_key = bytes(reversed(KEY))
    old = RequestStateCodec([KEY], clock=clock)
    rotated = RequestStateCodec([new_key, KEY], clock=clock)
    assert rotated.key_id != old.key_id
    assert rotated.verify(old.mint("alice", "tools/call", PARAMS), "alice", "tools/call", PARAMS)
    assert rotated.mint("alice", "tools/call", PARAMS).split(".")[1] == RequestStateCodec([new_key]).key_id


def test_a_worker_with_the_same_key_verifies_what_another_minted(clock):
    shared = new_shared_key()
    token = RequestStateCodec([shared], clock=clock).mint("alice", "tools/call", PARAMS)
    assert RequestStateCodec([shared], clock=clock).verify(token, "alice", "tools/call", PARAMS)


def test_size_is_bounded_on_mint_and_on_verify(clock):
    codec = RequestStateCodec([KEY], max_bytes=2048, clock=clock)
    with pytest.raises(ValueError, match="2048-byte limit"):
        codec.mint("alice", "tools/call", PARAMS, "x" * 4096)
    assert refusal(codec, "s1." + "A" * 4096) == "too_large"


def test_the_digest_is_canonical_and_ignores_what_the_retry_adds():
    assert arguments_digest({"a": 1, "b": [1.0, {"c": 2}]}) == arguments_digest({"b": [1, {"c": 2.0}], "a": 1.0})
    assert arguments_digest(None) == arguments_digest({})
    assert arguments_digest({"a": 1}) != arguments_digest({"a": "1"})


def test_keys_are_read_as_hex_or_base64_and_short_ones_refused():
    assert parse_keys(KEY.hex()) == [KEY]
    assert parse_keys(base64.b64encode(KEY).decode()) == [KEY]
    assert parse_keys(base64.urlsafe_b64encode(KEY).decode().rstrip("=") + ", " + KEY.hex()) == [KEY, KEY]
    with pytest.raises(ConfigError) as raised:
        parse_keys("short-secret")
    assert "short-secret" not in str(raised.value)


def test_the_settings_choose_the_fixed_key_then_the_shared_one_then_a_random_one(clock):
    fixed = Settings.from_mapping({"MCP_REQUEST_STATE_KEY": KEY.hex(), "MCP_REQUEST_STATE_TTL_S": "5"})
    shared = new_shared_key()
    assert codec_from_settings(fixed, shared).key_id == RequestStateCodec([KEY]).key_id
    assert codec_from_settings(fixed).ttl_s == 5
    assert codec_from_settings(Settings(), shared).key_id == RequestStateCodec([shared]).key_id
    assert codec_from_settings(Settings()).key_id != codec_from_settings(Settings()).key_id


def test_the_key_never_shows_in_the_settings_repr():
    assert KEY.hex() not in repr(Settings.from_mapping({"MCP_REQUEST_STATE_KEY": KEY.hex()}))


def test_settings_refuse_a_useless_ttl_or_size():
    with pytest.raises(ConfigError):
        Settings.from_mapping({"MCP_REQUEST_STATE_TTL_S": "0"})
    with pytest.raises(ConfigError):
        Settings.from_mapping({"MCP_REQUEST_STATE_MAX_BYTES": "10"})

"""auth.api_keys: the keys file, hashed keys, constant-time lookup, and the key generator script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flask_mcp_gevent.auth.api_keys import ApiKeyStore, hash_key, new_key
from flask_mcp_gevent.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def store_with(key: str, **entry) -> ApiKeyStore:
    """A store holding one key for principal alice (fields overridable)."""
    return ApiKeyStore.from_mapping({hash_key(key): {"principal": "alice", "tools": ["add"], **entry}})


def test_a_stored_key_authenticates_as_its_principal_with_its_grants():
    key = new_key()
    principal = store_with(key, prompts=["greet"]).authenticate(key)
    assert principal is not None
    assert principal.name == "alice"
    assert principal.grants.allows("tool", "add")
    assert principal.grants.allows("prompt", "greet")
    assert not principal.grants.allows("tool", "echo")


def test_unknown_and_near_miss_keys_do_not_authenticate():
    key = new_key()
    store = store_with(key)
    assert store.authenticate(new_key()) is None
    assert store.authenticate(key[:-1]) is None
    assert store.authenticate(key + "x") is None
    assert store.authenticate(hash_key(key)) is None  # the stored hash is not itself a key


def test_keys_are_never_held_in_clear():
    key = new_key()
    store = store_with(key)
    assert key.encode() not in repr(store.entries).encode()
    assert all(digest == hash_key(key).encode() for digest, _ in store.entries)


def test_new_keys_are_long_random_and_distinct():
    keys = {new_key() for _ in range(50)}
    assert len(keys) == 50
    assert all(k.startswith("mcp_") and len(k) >= 40 and "." not in k for k in keys)


def test_absent_permission_lists_grant_nothing():
    key = new_key()
    principal = ApiKeyStore.from_mapping({hash_key(key): {"principal": "bob"}}).authenticate(key)
    assert principal is not None
    assert not principal.grants.allows("tool", "add")
    assert not principal.grants.allows("resource", "file:///x")


def test_keys_sharing_a_principal_each_grant_only_their_own():
    read_only, full_power = new_key(), new_key()
    store = ApiKeyStore.from_mapping({
        hash_key(read_only): {"principal": "alice", "tools": ["get_*"]},
        hash_key(full_power): {"principal": "alice", "tools": ["*"], "prompts": ["*"]},
    })
    narrow, wide = store.authenticate(read_only), store.authenticate(full_power)
    assert narrow is not None and wide is not None and narrow.name == wide.name == "alice"
    assert narrow.allows("tool", "get_note") and not narrow.allows("tool", "delete_note")
    assert not narrow.allows("prompt", "p")
    assert wide.allows("tool", "delete_note") and wide.allows("prompt", "p")


@pytest.mark.parametrize(
    ("document", "complaint"),
    [
        ([], "expected a JSON object"),
        ({}, "expected a JSON object"),
        ({"not-a-hash": {"principal": "a"}}, "SHA-256 hex"),
        ({"A" * 64: {"principal": "a"}}, "SHA-256 hex"),
        ({"a" * 64: "alice"}, "must be an object"),
        ({"a" * 64: {}}, "'principal'"),
        ({"a" * 64: {"principal": ""}}, "'principal'"),
        ({"a" * 64: {"principal": "oauth:alice"}}, "oauth:"),
        ({"a" * 64: {"principal": "app:alice"}}, "app:"),
        ({"a" * 64: {"principal": "a", "tools": "add"}}, "'tools' must be a list"),
        ({"a" * 64: {"principal": "a", "prompts": [1]}}, "'prompts' must be a list"),
        ({"a" * 64: {"principal": "a", "key": "secret"}}, "unknown field"),
    ],
)
def test_malformed_files_are_refused_with_a_reason(document, complaint):
    with pytest.raises(ConfigError, match=complaint):
        ApiKeyStore.from_mapping(document)


def test_a_key_put_in_the_file_in_clear_is_refused_without_showing_any_of_it():
    key = new_key()
    with pytest.raises(ConfigError, match="entry 2: keys of the file must be SHA-256") as refused:
        ApiKeyStore.from_mapping({"a" * 64: {"principal": "bob"}, key: {"principal": "alice", "tools": ["*"]}})
    assert key[:6] not in str(refused.value)


def test_a_hash_followed_by_a_newline_is_refused():
    with pytest.raises(ConfigError, match="SHA-256 hex"):
        ApiKeyStore.from_mapping({"a" * 64 + "\n": {"principal": "alice"}})


def test_unreadable_and_non_json_files_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        ApiKeyStore.load(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        ApiKeyStore.load(str(bad))


def test_the_shipped_example_file_loads():
    store = ApiKeyStore.load(str(ROOT / "config" / "api_keys.example.json"))
    assert {"alice", "ops-dashboard", "docs-agent"} <= {principal.name for _, principal in store.entries}


def test_the_key_script_prints_a_key_whose_hash_it_prints(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "new_api_key.py"), "--principal", "carol", "--tools", "add", "echo"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout
    lines = out.splitlines()
    key = lines[0].split()[-1]
    digest = lines[1].split()[-1]
    assert hash_key(key) == digest
    entry = json.loads(lines[-1])
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps(entry))
    principal = ApiKeyStore.load(str(keys_file)).authenticate(key)
    assert principal is not None and principal.name == "carol"
    assert principal.grants.tools == ("add", "echo")

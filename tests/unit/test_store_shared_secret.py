"""FleetBus.shared_secret: one random secret per name for everyone who shares the store (Redis: every worker and
host)."""

from __future__ import annotations

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.stateless.request_state import RequestStateCodec, SharedCodec


def test_a_secret_is_the_same_on_every_call_and_differs_by_name(make_store):
    store = make_store()
    first = store.fleet.shared_secret("request-state")
    assert len(first) == 32
    assert store.fleet.shared_secret("request-state") == first
    assert store.fleet.shared_secret("other") != first


def test_redis_workers_share_one_secret_without_operator_work(redis_stores):
    one, two = redis_stores(), redis_stores()
    assert one.fleet.shared_secret("request-state") == two.fleet.shared_secret("request-state")


def test_a_state_minted_on_one_redis_worker_opens_on_another(redis_stores):
    settings = Settings.from_mapping({})
    minting = SharedCodec(settings, redis_stores().fleet.shared_secret)()
    opening = SharedCodec(settings, redis_stores().fleet.shared_secret)()
    params = {"name": "tool", "arguments": {"a": 1}}
    token = minting.mint("alice", "tools/call", params, tool_state={"n": 1}, answers={"k": {"action": "cancel"}})
    state = opening.verify(token, "alice", "tools/call", params)
    assert state.tool_state == {"n": 1}
    assert state.answers == {"k": {"action": "cancel"}}


def test_a_fixed_key_is_used_without_asking_the_store():
    asked = []
    settings = Settings.from_mapping({"MCP_REQUEST_STATE_KEY": "cd" * 32})
    codec = SharedCodec(settings, lambda name: asked.append(name) or b"x" * 32)()
    assert asked == []
    assert codec.key_id == RequestStateCodec([bytes.fromhex("cd" * 32)]).key_id

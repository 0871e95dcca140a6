"""get_session_for_call: a tools/call's session and its slot in one script, only for its own principal and transport."""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.hub import redis_multiplex, redis_sessions
from flask_mcp_gevent.hub.base import ALL_SLOTS_TAKEN
from flask_mcp_gevent.hub.redis_codec import session_json
from flask_mcp_gevent.hub.redis_keys import call_slots_key, session_base
from flask_mcp_gevent.session import SSE, STREAMABLE, SessionChange
from tests.support.hubs import Hubs, new_session, queued_commands


def fresh_session(hub, transport: str = STREAMABLE, principal: str | None = "alice"):
    """A stored session this worker just looked up (its TTL refreshed: the one-script path applies)."""
    session = new_session(hub, transport=transport, principal=principal)
    assert hub.get_session(session.id) is not None
    assert hub.sessions.ttl_is_fresh(session.id)
    return session


def slots(redis_server, session_id: str) -> list[bytes]:
    """The lease tokens in the session's running-calls set."""
    return redis_server.client().zrange(call_slots_key(session_id), 0, -1)


def command_calls(redis_server) -> dict[str, int]:
    """How many times Redis ran each command so far."""
    return {name: stats["calls"] for name, stats in redis_server.client().info("commandstats").items()}


@pytest.mark.redis
def test_a_fresh_session_comes_with_a_slot_taken_by_one_script(redis_hubs, redis_server):
    hub = redis_hubs()
    warm = fresh_session(hub)
    assert hub.get_session_for_call(warm.id, STREAMABLE, "alice", 4)[1]  # the script is loaded now
    session = fresh_session(hub)
    before = command_calls(redis_server)
    with queued_commands(hub) as queued:
        found, token = hub.get_session_for_call(session.id, STREAMABLE, "alice", 4)
    after = command_calls(redis_server)
    # What is queued in RESP: "*<n>", "$<len>", then the first command's name; and how many replies it expects.
    sent = [(data.split(b"\r\n")[2], expected) for data, expected in queued]
    assert found is not None and found.id == session.id and found.principal == "alice"
    assert token and token.startswith(hub.link.worker_id + "|")
    assert slots(redis_server, session.id) == [token.encode()]
    # One round trip, one command: the script, reading the session and taking the slot.
    assert sent == [(b"EVALSHA", 1)]
    assert after["cmdstat_evalsha"] - before["cmdstat_evalsha"] == 1
    # The lease runs from Redis's clock, and the set expires with it.
    client = redis_server.client()
    seconds, micros = client.time()
    now_ms = seconds * 1000 + micros // 1000
    lease = client.zscore(call_slots_key(session.id), token)
    assert now_ms < lease <= now_ms + redis_sessions.CALL_LEASE_MS
    assert 0 < client.pttl(call_slots_key(session.id)) <= redis_sessions.CALL_LEASE_MS


@pytest.mark.redis
def test_with_every_slot_taken_it_answers_all_slots_taken_and_takes_none(redis_hubs, redis_server):
    hub = redis_hubs()
    session = fresh_session(hub)
    tokens = [hub.get_session_for_call(session.id, STREAMABLE, "alice", 2)[1] for _ in range(2)]
    assert all(tokens) and len(set(tokens)) == 2
    found, refused = hub.get_session_for_call(session.id, STREAMABLE, "alice", 2)
    assert found is not None and found.id == session.id  # the session is found: its call is refused (-32004)
    assert refused == ALL_SLOTS_TAKEN == ""
    assert sorted(slots(redis_server, session.id)) == sorted(token.encode() for token in tokens)
    # A slot given back is there for the next call.
    hub.give_back_call_slot(session.id, tokens[0])
    assert hub.get_session_for_call(session.id, STREAMABLE, "alice", 2)[1]


@pytest.mark.parametrize("take", ["with the session", "alone"])
@pytest.mark.redis
def test_leases_that_ran_out_free_their_slots_once_the_set_looks_full(redis_hubs, redis_server, take):
    hub = redis_hubs()
    session = fresh_session(hub)
    client = redis_server.client()
    calls = call_slots_key(session.id)
    client.zadd(calls, {"dead|1": 1, "dead|2": 2})  # a killed worker's leases, run out long ago
    client.pexpire(calls, 60_000)

    def taken(limit: int) -> bool:
        if take == "alone":
            return hub.take_call_slot(session.id, limit) is not None
        return bool(hub.get_session_for_call(session.id, STREAMABLE, "alice", limit)[1])

    assert taken(3)  # room left: the dead leases are not even looked at
    assert b"dead|1" in slots(redis_server, session.id)
    assert taken(3)  # full to the count, but two ran out: they go, and this one is taken
    assert not any(token.startswith(b"dead|") for token in slots(redis_server, session.id))
    assert len(slots(redis_server, session.id)) == 2
    assert taken(3)
    assert not taken(3)  # three live leases: full


@pytest.mark.parametrize(("transport", "principal"), [
    (STREAMABLE, "bob"),   # another principal
    (STREAMABLE, None),    # no principal at all
    (SSE, "alice"),        # the owner, on the other transport
    (STREAMABLE, ""),      # an empty name is not the owner's
])
@pytest.mark.redis
def test_another_principal_or_transport_gets_nothing_and_takes_no_slot(redis_hubs, redis_server, transport,
                                                                        principal):
    hub = redis_hubs()
    session = fresh_session(hub)
    held = hub.get_session_for_call(session.id, STREAMABLE, "alice", 3)[1]
    assert hub.get_session_for_call(session.id, transport, principal, 3) == (None, None)
    assert hub.sessions.ttl_is_fresh(session.id)  # the probe went through the one-script path
    assert slots(redis_server, session.id) == [held.encode()]


@pytest.mark.redis
def test_a_session_without_principal_is_nobody_elses(redis_hubs, redis_server):
    hub = redis_hubs()
    session = fresh_session(hub, transport=SSE, principal=None)
    assert hub.get_session_for_call(session.id, SSE, "alice", 3) == (None, None)
    assert slots(redis_server, session.id) == []
    found, token = hub.get_session_for_call(session.id, SSE, None, 3)
    assert found is not None and found.principal is None and token


@pytest.mark.redis
def test_an_unknown_or_vanished_session_gets_nothing(redis_hubs, redis_server):
    hub = redis_hubs()
    assert hub.get_session_for_call("0" * 32, STREAMABLE, "alice", 3) == (None, None)
    session = fresh_session(hub)
    redis_server.client().delete(session_base(session.id))  # expired since this worker looked
    assert hub.sessions.ttl_is_fresh(session.id)
    assert hub.get_session_for_call(session.id, STREAMABLE, "alice", 3) == (None, None)
    assert not redis_server.client().exists(call_slots_key(session.id))


@pytest.mark.redis
def test_with_a_stale_ttl_the_session_is_looked_up_the_old_way_and_its_ttl_refreshed(redis_hubs, redis_server):
    hub = redis_hubs(MCP_PENDING_SESSION_TTL_S=5, MCP_SESSION_TTL_S=600)
    client = redis_server.client()
    session = new_session(hub, transport=STREAMABLE, principal="alice")
    assert client.pttl(session_base(session.id)) <= 5000  # pending: nobody came back to it yet
    assert not hub.sessions.ttl_is_fresh(session.id)
    # A foreign probe neither finds it nor refreshes it.
    assert hub.get_session_for_call(session.id, STREAMABLE, "bob", 1) == (None, None)
    assert client.pttl(session_base(session.id)) <= 5000
    found, token = hub.get_session_for_call(session.id, STREAMABLE, "alice", 1)
    assert found is not None and found.id == session.id
    assert token is None  # the dispatcher takes the slot
    assert slots(redis_server, session.id) == []
    assert client.pttl(session_base(session.id)) > 500_000  # the full idle TTL now
    assert hub.sessions.ttl_is_fresh(session.id)
    assert hub.get_session_for_call(session.id, STREAMABLE, "alice", 1)[1]  # and the next one takes its slot


@pytest.mark.redis
def test_a_held_slot_is_renewed_and_one_never_held_lapses_after_its_lease(redis_hubs, redis_server, monkeypatch):
    monkeypatch.setattr(redis_sessions, "CALL_LEASE_MS", 1000)
    hub = redis_hubs()
    running, abandoned = fresh_session(hub), fresh_session(hub)
    held = hub.get_session_for_call(running.id, STREAMABLE, "alice", 1)[1]
    never_held = hub.get_session_for_call(abandoned.id, STREAMABLE, "alice", 1)[1]
    assert held and never_held
    hub.hold_call_slot(running.id, held)  # its call runs: the worker renews its lease
    for _ in range(6):
        gevent.sleep(0.25)
        hub.call_slots.renew_call_leases()
    # Both leases were 1 s, 1.5 s ago: the held one is still taken, the other came back.
    for session in (running, abandoned):
        hub.get_session(session.id)  # fresh again if its 2 s had passed: the one-script path applies
        assert hub.sessions.ttl_is_fresh(session.id)
    found, refused = hub.get_session_for_call(running.id, STREAMABLE, "alice", 1)
    assert found.id == running.id and refused == ALL_SLOTS_TAKEN
    again = hub.get_session_for_call(abandoned.id, STREAMABLE, "alice", 1)[1]
    assert again and again != never_held
    assert slots(redis_server, abandoned.id) == [again.encode()]
    assert slots(redis_server, running.id) == [held.encode()]
    # Given back, it is neither held nor renewed any more.
    hub.give_back_call_slot(running.id, held)
    assert slots(redis_server, running.id) == []
    assert held not in hub.call_slots.call_leases


def test_the_memory_hub_leaves_the_slot_to_the_dispatcher():
    hubs = Hubs("memory", None)
    try:
        hub = hubs()
        session = new_session(hub, transport=STREAMABLE, principal="alice")
        found, token = hub.get_session_for_call(session.id, STREAMABLE, "alice", 1)
        assert found is not None and found.id == session.id and token is None
        assert hub.get_session_for_call(session.id, STREAMABLE, "bob", 1) == (None, None)
        assert hub.get_session_for_call(session.id, SSE, "alice", 1) == (None, None)
    finally:
        hubs.close()


@pytest.mark.parametrize("owner", ["a/b", "ünïcode", 'x","principal":"bob', "bob\\"])
@pytest.mark.parametrize("rewritten", [False, True])
@pytest.mark.redis
def test_the_owner_is_told_apart_whether_the_json_is_as_written_or_rewritten_by_the_update_script(
        redis_hubs, redis_server, owner, rewritten):
    hub = redis_hubs()
    session = fresh_session(hub, principal=owner)
    if rewritten:  # the update script re-encodes the JSON with cjson (its own escapes, its own field order)
        hub.update_session(session.id, SessionChange(assign={"log_level": "info"}))
        assert hub.get_session(session.id).log_level == "info"
    found, token = hub.get_session_for_call(session.id, STREAMABLE, owner, 3)
    assert found is not None and found.principal == owner and token
    for stranger in ("bob", "a", "", None, owner + "x"):
        assert hub.get_session_for_call(session.id, STREAMABLE, stranger, 3) == (None, None)
    assert hub.get_session_for_call(session.id, SSE, owner, 3) == (None, None)
    assert slots(redis_server, session.id) == [token.encode()]


@pytest.mark.redis
def test_a_client_chosen_field_that_spells_the_owner_s_fields_makes_no_one_the_owner(redis_hubs, redis_server):
    hub = redis_hubs()
    forged = '"transport":"streamable","principal":"bob"'
    session = fresh_session(hub, principal="alice")
    hub.update_session(session.id, SessionChange(assign={"client_info": {"name": forged, forged: forged}}))
    # Written back as workers write a session (session_json), with that text inside.
    redis_server.client().set(session_base(session.id), session_json(hub.get_session(session.id)), keepttl=True)
    assert forged.encode() not in redis_server.client().get(session_base(session.id))  # stored escaped
    assert hub.get_session_for_call(session.id, STREAMABLE, "bob", 3) == (None, None)
    assert hub.get_session_for_call(session.id, STREAMABLE, "alice", 3)[1]


@pytest.mark.redis
def test_the_slot_lookup_sent_packed_is_the_command_packed_argument_by_argument(redis_hubs):
    hub = redis_hubs()
    session = fresh_session(hub, principal=None)
    assert hub.get_session_for_call(session.id, STREAMABLE, None, 4)[1]  # loads the script, packs the lookup
    with queued_commands(hub) as queued:
        found, token = hub.get_session_for_call(session.id, STREAMABLE, None, 4)
    sent = [data for data, _ in queued]
    assert found is not None and token
    keys, fixed = hub.call_slots.slot_lookup(session.id, STREAMABLE, None, 4)
    script = hub.link.scripts["get_taking_call_slot"]
    # What a generic packer makes of EVALSHA, the SHA, the key count, the keys, the token and the fixed arguments.
    assert sent[-1] == redis_multiplex.pack(("EVALSHA", script.sha, len(keys), *keys, token, *fixed))

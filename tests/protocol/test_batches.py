"""JSON-RPC batches: answered on 2025-03-26 sessions only, rejected whole on every other version."""

from __future__ import annotations

import pytest

BATCH = (
    '[{"jsonrpc": "2.0", "id": 1, "method": "ping"},'
    ' {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}},'
    ' {"jsonrpc": "2.0", "method": "notifications/initialized"}]'
)


def test_a_batch_is_answered_request_by_request_on_2025_03_26(make_rpc):
    responses = make_rpc("2025-03-26")(BATCH)
    by_id = {r["id"]: r for r in responses}
    assert set(by_id) == {1, 2}
    assert by_id[1]["result"] == {}
    assert by_id[2]["result"]["content"] == [{"type": "text", "text": "3"}]


def test_a_batch_of_notifications_only_gets_no_answer_on_2025_03_26(make_rpc):
    rpc = make_rpc("2025-03-26")
    assert rpc('[{"jsonrpc": "2.0", "method": "notifications/initialized"}]') == []


def test_invalid_members_of_a_batch_get_their_own_errors_on_2025_03_26(make_rpc):
    rpc = make_rpc("2025-03-26")
    responses = rpc('[5, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"id": 3, "method": "ping"}]')
    errors = sorted((r["id"] is None, r["id"], r["error"]["code"]) for r in responses if "error" in r)
    assert errors == [(False, 3, -32600), (True, None, -32600)]
    assert [r["result"] for r in responses if "result" in r] == [{}]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", None])
def test_a_batch_is_rejected_whole_on_other_versions(make_rpc, version):
    rpc = make_rpc(version)
    responses = rpc(BATCH)
    assert len(responses) == 1
    assert responses[0]["id"] is None
    assert responses[0]["error"]["code"] == -32600
    assert "batch" in responses[0]["error"]["message"]
    # Nothing in the rejected batch ran, not even the notification.
    assert rpc.session.initialized is (version is not None)


def test_a_batch_of_one_is_still_a_batch(make_rpc):
    responses = make_rpc("2025-06-18")('[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]')
    assert [r["error"]["code"] for r in responses] == [-32600]


def test_a_batch_before_initialize_is_refused_saying_initialize_comes_first(rpc):
    response = rpc.one('[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]')
    assert response["error"]["code"] == -32600
    assert "before initialize" in response["error"]["message"]
    assert "in use" not in response["error"]["message"]

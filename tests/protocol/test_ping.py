"""ping: an empty result, before and after initialize."""

from __future__ import annotations


def test_ping_answers_an_empty_object(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert rpc.one('{"jsonrpc": "2.0", "id": 7, "method": "ping"}') == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_ping_is_allowed_before_initialize(rpc):
    assert rpc.one('{"jsonrpc": "2.0", "id": "p", "method": "ping"}') == {"jsonrpc": "2.0", "id": "p", "result": {}}
    assert not rpc.session.negotiated


def test_ping_with_empty_params_answers_too(rpc):
    assert rpc.one('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}')["result"] == {}

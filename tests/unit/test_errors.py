"""errors: codes, error responses, and RpcError as it goes on the wire."""

from __future__ import annotations

import re

from flask_mcp_gevent.errors import PERMISSION_DENIED, RESOURCE_NOT_FOUND, RpcError, error_response, new_correlation_id


def test_error_response_leaves_out_data_unless_given():
    assert error_response(1, -32600, "bad") == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "bad"}}
    assert error_response(None, -32602, "bad", {"tool": "x"})["error"]["data"] == {"tool": "x"}


def test_rpc_error_to_dict_carries_data_only_when_given():
    assert RpcError(PERMISSION_DENIED, "no").to_dict() == {"code": -32001, "message": "no"}
    assert RpcError(RESOURCE_NOT_FOUND, "gone", {"uri": "x://y"}).to_dict() == {
        "code": -32002, "message": "gone", "data": {"uri": "x://y"}}


def test_falsy_data_is_still_sent():
    assert RpcError(-32602, "bad", 0).to_dict()["data"] == 0
    assert RpcError(-32602, "bad", []).to_dict()["data"] == []


def test_correlation_ids_are_short_random_hex():
    ids = {new_correlation_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"[0-9a-f]{12}", i) for i in ids)

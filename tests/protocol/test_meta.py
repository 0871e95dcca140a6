"""`_meta` in params is taken out before dispatch, so it never breaks a method's signature."""

from __future__ import annotations

import pytest

META = '"_meta": {"progressToken": "t-1", "io.example/trace": {"span": 7}}'


def test_initialize_with_meta_works(rpc):
    response = rpc.one(
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", '
        f'"params": {{"protocolVersion": "2025-06-18", "capabilities": {{}}, {META}}}}}'
    )
    assert response["result"]["protocolVersion"] == "2025-06-18"


@pytest.mark.parametrize(
    "method, params, key",
    [
        ("ping", f"{{{META}}}", "result"),
        ("tools/list", f"{{{META}}}", "result"),
        ("tools/call", f'{{"name": "add", "arguments": {{"a": 1, "b": 1}}, {META}}}', "result"),
        ("tools/call", '{"name": "echo", "arguments": {"text": "x"}, "_meta": null}', "result"),
        ("tools/call", '{"name": "echo", "arguments": {"text": "x"}, "_meta": "not an object"}', "result"),
    ],
)
def test_requests_with_meta_dispatch_normally(make_rpc, method, params, key):
    response = make_rpc("2025-06-18").one(f'{{"jsonrpc": "2.0", "id": 2, "method": "{method}", "params": {params}}}')
    assert key in response, response
    if method == "tools/call":
        assert response["result"]["isError"] is False


def test_notifications_with_meta_work(rpc):
    rpc.request("initialize", {"protocolVersion": "2025-06-18"})
    assert rpc(f'{{"jsonrpc": "2.0", "method": "notifications/initialized", "params": {{{META}}}}}') == []
    assert rpc.session.initialized

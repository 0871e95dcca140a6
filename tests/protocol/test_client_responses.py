"""Client responses (result or error, no method) are accepted, never answered, and routed to their waiter."""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.messages import parse_body
from mcp_tools import Registry, tool


@pytest.mark.parametrize(
    "body",
    [
        '{"jsonrpc": "2.0", "id": "srv-unknown", "result": {}}',
        '{"jsonrpc": "2.0", "id": 17, "error": {"code": -1, "message": "no"}}',
    ],
)
def test_a_client_response_nobody_waits_for_is_accepted_silently(make_rpc, body):
    rpc = make_rpc("2025-06-18")
    assert rpc(body) == []
    assert rpc.sent == []


def test_a_client_response_resolves_the_waiting_request(server, make_rpc):
    rpc = make_rpc("2025-06-18")
    request_id, waiting = server.questions.open(rpc.session.id)
    assert rpc(f'{{"jsonrpc": "2.0", "id": "{request_id}", "result": {{"roots": []}}}}') == []
    assert waiting.ready()
    assert waiting.get(timeout=1) == {"jsonrpc": "2.0", "id": request_id, "result": {"roots": []}}


def test_a_client_error_response_resolves_the_waiting_request(server, make_rpc):
    rpc = make_rpc("2025-06-18")
    request_id, waiting = server.questions.open(rpc.session.id)
    assert rpc(f'{{"jsonrpc": "2.0", "id": "{request_id}", "error": {{"code": -1, "message": "denied"}}}}') == []
    assert waiting.get(timeout=1)["error"]["message"] == "denied"


def test_a_response_from_another_session_does_not_resolve(server, make_rpc):
    owner, stranger = make_rpc("2025-06-18"), make_rpc("2025-06-18")
    request_id, waiting = server.questions.open(owner.session.id)
    assert stranger(f'{{"jsonrpc": "2.0", "id": "{request_id}", "result": {{}}}}') == []
    assert not waiting.ready()


def test_a_message_with_both_result_and_error_is_invalid_request(make_rpc):
    rpc = make_rpc("2025-06-18")
    response = rpc.one('{"jsonrpc": "2.0", "id": 3, "result": {}, "error": {"code": 1, "message": "x"}}')
    assert response["error"]["code"] == -32600
    assert response["id"] == 3


def test_a_tool_waiting_on_the_client_gets_the_answer_routed_to_it(make_server):
    @tool(input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def roots(ctx) -> list:
        """Ask the client for its roots."""
        return [root["uri"] for root in ctx.list_roots()]

    registry = Registry()
    registry.add_function(roots)
    server = make_server(registry=registry)
    session = server.open_session("sse")
    sent: list[dict] = []
    init = (
        b'{"jsonrpc": "2.0", "id": 0, "method": "initialize",'
        b' "params": {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}}}'
    )
    server.accept(session, parse_body(init), sent.append)[0][0].join(timeout=10)
    (call,), _ = server.accept(
        session, parse_body(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "roots"}}'),
        sent.append,
    )
    with gevent.Timeout(10):
        while not sent:
            gevent.sleep(0.01)
    (question,) = sent
    assert question["method"] == "roots/list"
    answer = f'{{"jsonrpc": "2.0", "id": "{question["id"]}", "result": {{"roots": [{{"uri": "file:///w"}}]}}}}'
    assert server.accept(session, parse_body(answer.encode()), sent.append) == ([], [])
    call.join(timeout=10)
    assert call.value["result"]["structuredContent"] == {"result": ["file:///w"]}

"""Requests a tool sends the client through ctx: sampling, elicitation, roots; capabilities, errors, timeouts."""

from __future__ import annotations

import gevent
import pytest

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.messages import parse_body
from mcp_tools import Registry, tool
from tests.protocol.conftest import Rpc

NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ALL_CAPABILITIES = {"sampling": {}, "elicitation": {}, "roots": {"listChanged": True}}
WAIT_S = 10.0


@tool(input_schema=NO_ARGUMENTS)
def ask_model(ctx) -> str:
    """Ask the client's model a question and return its answer's text."""
    answer = ctx.sample([{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
                        max_tokens=50, systemPrompt="Answer in one word.")
    return f"model said: {answer['content']['text']}"


@tool(input_schema=NO_ARGUMENTS)
def ask_user(ctx) -> dict:
    """Ask the client's user for a name and return the whole answer."""
    return ctx.elicit("What is your name?", NAME_SCHEMA)


@tool(input_schema=NO_ARGUMENTS)
def roots(ctx) -> dict:
    """Return the client's roots."""
    return {"roots": ctx.list_roots()}


@pytest.fixture
def registry() -> Registry:
    """Only this module's tools."""
    registry = Registry()
    for fn in (ask_model, ask_user, roots):
        registry.add_function(fn)
    return registry


@pytest.fixture
def client(rpc):
    """A session that declared sampling, elicitation and roots."""
    rpc.initialize("2025-06-18", capabilities=ALL_CAPABILITIES)
    return rpc


def start_call(rpc, name: str, request_id: int = 1) -> gevent.Greenlet:
    """Start a tools/call without waiting for it; return its greenlet."""
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": {}}}
    (greenlet,), errors = rpc.server.accept(rpc.session, parse_body(dumps(message)), rpc.sent.append)
    assert errors == []
    return greenlet


def wait_for_request(rpc, method: str) -> dict:
    """Wait until the server has sent the client a request with method; return it."""
    with gevent.Timeout(WAIT_S, AssertionError(f"no {method} request was sent")):
        while not (found := [m for m in rpc.sent if m.get("method") == method and "id" in m]):
            gevent.sleep(0.001)
    return found[-1]


def finish(greenlet: gevent.Greenlet) -> dict:
    """Wait for a call to end; return its result."""
    greenlet.join(timeout=WAIT_S)
    assert greenlet.dead, "the call did not finish"
    return greenlet.value["result"]


def text_of(result: dict) -> str:
    """The one text block of a tool result."""
    (block,) = result["content"]
    return block["text"]


# sampling
def test_sampling_sends_the_request_and_the_answer_wakes_the_tool(client):
    call = start_call(client, "ask_model")
    question = wait_for_request(client, "sampling/createMessage")
    assert question == {"jsonrpc": "2.0", "id": question["id"], "method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
        "maxTokens": 50, "systemPrompt": "Answer in one word.",
    }}
    answer = {"jsonrpc": "2.0", "id": question["id"],
              "result": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}}
    assert client(dumps(answer)) == []
    result = finish(call)
    assert result["isError"] is False
    assert text_of(result) == "model said: Paris"


def test_each_server_request_gets_its_own_id(client):
    first, second = start_call(client, "ask_model", 1), start_call(client, "ask_model", 2)
    with gevent.Timeout(WAIT_S):
        while len([m for m in client.sent if m.get("method") == "sampling/createMessage"]) < 2:
            gevent.sleep(0.001)
    one, two = (m for m in client.sent if m.get("method") == "sampling/createMessage")
    assert one["id"] != two["id"]
    # Answer in the opposite order: each answer wakes its own call.
    for message, word in ((two, "second"), (one, "first")):
        client(dumps({"jsonrpc": "2.0", "id": message["id"],
                      "result": {"role": "assistant", "content": {"type": "text", "text": word}, "model": "m"}}))
    assert {text_of(finish(first)), text_of(finish(second))} == {"model said: first", "model said: second"}


@pytest.mark.parametrize(
    ("tool_name", "capability"), [("ask_model", "sampling"), ("ask_user", "elicitation"), ("roots", "roots")])
def test_a_client_without_the_capability_gets_a_clear_error_result_and_no_request(make_rpc, tool_name, capability):
    rpc = make_rpc("2025-06-18")
    result = rpc.request("tools/call", {"name": tool_name, "arguments": {}})["result"]
    assert result == {"isError": True, "content": [{"type": "text", "text": (
        f"The client did not declare the '{capability}' capability, so this tool cannot use it")}]}
    assert rpc.sent == []


@pytest.mark.parametrize(
    ("error", "reason"),
    [({"code": -1, "message": "User rejected sampling request"}, "User rejected sampling request"),
     ({"code": -32603}, "no reason given")],
)
def test_a_client_error_answer_is_an_error_result(client, error, reason):
    call = start_call(client, "ask_model")
    question = wait_for_request(client, "sampling/createMessage")
    client(dumps({"jsonrpc": "2.0", "id": question["id"], "error": error}))
    result = finish(call)
    assert result["isError"] is True
    assert text_of(result) == f"The client refused sampling/createMessage: {reason}"


# elicitation and roots
def test_elicitation_sends_message_and_schema_and_returns_the_answer(client):
    call = start_call(client, "ask_user")
    question = wait_for_request(client, "elicitation/create")
    assert question["params"] == {"message": "What is your name?", "requestedSchema": NAME_SCHEMA}
    client(dumps({"jsonrpc": "2.0", "id": question["id"],
                  "result": {"action": "accept", "content": {"name": "Ada"}}}))
    assert finish(call)["structuredContent"] == {"action": "accept", "content": {"name": "Ada"}}


def test_roots_list_returns_the_clients_roots(client):
    call = start_call(client, "roots")
    question = wait_for_request(client, "roots/list")
    assert question["params"] == {}
    roots_given = [{"uri": "file:///home/ada", "name": "home"}]
    client(dumps({"jsonrpc": "2.0", "id": question["id"], "result": {"roots": roots_given}}))
    assert finish(call)["structuredContent"] == {"roots": roots_given}


def test_a_roots_answer_without_roots_means_none(client):
    call = start_call(client, "roots")
    question = wait_for_request(client, "roots/list")
    client(dumps({"jsonrpc": "2.0", "id": question["id"], "result": {}}))
    assert finish(call)["structuredContent"] == {"roots": []}


# timeouts and cancellation
def test_a_client_that_never_answers_times_out_with_an_error_result_and_a_cancellation(make_server):
    registry = Registry()
    registry.add_function(roots)
    server = make_server({"MCP_CLIENT_REQUEST_TIMEOUT_S": "0.2"}, registry=registry)
    rpc = Rpc(server, server.open_session("sse"))
    rpc.initialize("2025-06-18", capabilities=ALL_CAPABILITIES)
    call = start_call(rpc, "roots")
    question = wait_for_request(rpc, "roots/list")
    result = finish(call)
    assert result["isError"] is True
    assert text_of(result) == "The client did not answer roots/list within 0.2 s"
    assert rpc.sent[-1] == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": question["id"], "reason": "timed out"}}
    # A late answer finds nobody waiting and is dropped without a reply.
    assert rpc(dumps({"jsonrpc": "2.0", "id": question["id"], "result": {"roots": []}})) == []
    assert not server.resolve(rpc.session.id, {"jsonrpc": "2.0", "id": question["id"], "result": {}})


def test_cancelling_a_tool_that_waits_on_the_client_forgets_the_request(client):
    call = start_call(client, "ask_model", request_id=31)
    question = wait_for_request(client, "sampling/createMessage")
    client('{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 31}}')
    call.join(timeout=WAIT_S)
    assert call.dead and call.value is None
    answer = {"jsonrpc": "2.0", "id": question["id"],
              "result": {"role": "assistant", "content": {"type": "text", "text": "late"}, "model": "m"}}
    assert not client.server.resolve(client.session.id, answer)

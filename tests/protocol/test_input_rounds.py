"""Multi round-trip requests: the same tools ask by input_required on the 2026-07-28 wire, by request in a session.

Stateless requests are dispatched the way the stateless wire does it: a RequestContext whose era is "stateless",
whose session is built from the request's clientCapabilities and never stored, and whose params are the
request's own.
"""

from __future__ import annotations

from typing import Any

import gevent
import pytest

from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.protocol.request_context import STATELESS_ERA, RequestContext
from flask_mcp_gevent.server import jsonrpc_dispatch
from flask_mcp_gevent.session import Session
from flask_mcp_gevent.stateless.methods import STATELESS_METHODS
from mcp_tools import InputRequest, Registry, resource, tool
from tests.conformance.runner import FIXTURE_PLUGINS

ALL_CAPABILITIES = {"sampling": {}, "elicitation": {}, "roots": {}}
FIXTURES = FIXTURE_PLUGINS.split(",")
WAIT_S = 10.0


@pytest.fixture
def registry() -> Registry:
    """The conformance fixtures, input-required ones included."""
    return Registry.discover(plugins=FIXTURES)


class Stateless:
    """Send 2026-07-28 requests to a server as the stateless wire does; keep what it sent besides answers."""

    def __init__(self, server, principal: str | None = None) -> None:
        self.server = server
        self.principal = principal
        self.sent: list[dict[str, Any]] = []

    def __call__(self, method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = None,
                 request_id: Any = 1) -> dict[str, Any]:
        """Dispatch one request and return its response."""
        session = Session(transport="stateless", principal=self.principal, protocol_version="2026-07-28",
                          client_capabilities=ALL_CAPABILITIES if capabilities is None else capabilities,
                          initialized=True)
        ctx = RequestContext(self.server.services, session, self.sent.append, request_id, method, {},
                             era=STATELESS_ERA,
                             params=params)
        request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        message = parse_body(dumps(request)).messages[0]
        response = jsonrpc_dispatch(STATELESS_METHODS, ctx, message)
        return loads(dumps(response))

    def call(self, name: str, request_id: Any = 1, capabilities: dict[str, Any] | None = None,
             **params: Any) -> dict[str, Any]:
        """tools/call name without arguments, with extra params (inputResponses, requestState)."""
        return self("tools/call", {"name": name, "arguments": {}, **params}, capabilities, request_id)


@pytest.fixture
def stateless(server) -> Stateless:
    """A stateless client of server without authentication (principal none)."""
    return Stateless(server)


def accept(content: dict[str, Any]) -> dict[str, Any]:
    """An ElicitResult that accepts with content."""
    return {"action": "accept", "content": content}


SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "Paris."}, "model": "m", "stopReason": "endTurn"}
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}


def text_of(response: dict[str, Any]) -> str:
    """The text of a complete tool result."""
    result = response["result"]
    assert result.get("resultType", "complete") == "complete", result
    return result["content"][0]["text"]


def test_an_elicitation_answers_input_required_then_completes_on_the_retry(stateless):
    first = stateless.call("test_input_required_result_elicitation")["result"]
    assert first["resultType"] == "input_required"
    assert first["inputRequests"] == {"user_name": {"method": "elicitation/create", "params": {
        "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}}
    assert isinstance(first["requestState"], str)
    assert stateless.sent == []  # never a server-to-client request on this wire
    retry = stateless.call("test_input_required_result_elicitation", request_id=2,
                        inputResponses={"user_name": accept({"name": "Alice"})}, requestState=first["requestState"])
    assert text_of(retry) == "Hello, Alice!"


def test_sampling_and_roots_ask_by_input_required_too(stateless):
    sampling = stateless.call("test_input_required_result_sampling")["result"]
    assert sampling["inputRequests"]["capital_question"]["method"] == "sampling/createMessage"
    assert sampling["inputRequests"]["capital_question"]["params"]["maxTokens"] == 100
    assert text_of(stateless.call("test_input_required_result_sampling", inputResponses={"capital_question": SAMPLED},
                               requestState=sampling["requestState"])) == "Paris."
    roots = stateless.call("test_input_required_result_list_roots")["result"]
    assert roots["inputRequests"] == {"client_roots": {"method": "roots/list", "params": {}}}
    assert text_of(stateless.call("test_input_required_result_list_roots", inputResponses={"client_roots": ROOTS},
                               requestState=roots["requestState"])) == "Roots: file:///work"


def test_a_legacy_session_still_gets_a_server_to_client_request(make_rpc):
    rpc = make_rpc()
    rpc.initialize("2025-11-25", capabilities=ALL_CAPABILITIES)
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "test_input_required_result_elicitation", "arguments": {}}}
    (greenlet,), _ = rpc.server.accept(rpc.session, parse_body(dumps(message)), rpc.sent.append)
    with gevent.Timeout(WAIT_S, AssertionError("no elicitation/create request was sent")):
        while not (asked := [m for m in rpc.sent if m.get("method") == "elicitation/create"]):
            gevent.sleep(0.001)
    answer = {"jsonrpc": "2.0", "id": asked[0]["id"], "result": {"action": "accept", "content": {"name": "Bo"}}}
    assert rpc(dumps(answer)) == []
    greenlet.join(timeout=WAIT_S)
    assert greenlet.value["result"]["content"][0]["text"] == "Hello, Bo!"
    assert "resultType" not in greenlet.value["result"]


def test_answers_are_replayed_from_the_state_over_many_rounds(stateless):
    first = stateless.call("test_input_required_result_multi_round")["result"]
    assert list(first["inputRequests"]) == ["step1"]
    second = stateless.call("test_input_required_result_multi_round", inputResponses={"step1": accept({"name": "Al"})},
                         requestState=first["requestState"])["result"]
    assert list(second["inputRequests"]) == ["step2"]
    assert second["requestState"] != first["requestState"]
    # Round 3 sends only step2: step1's answer comes back out of the sealed state.
    third = stateless.call("test_input_required_result_multi_round",
                           inputResponses={"step2": accept({"color": "blue"})},
                        requestState=second["requestState"])
    assert text_of(third) == "Al likes blue"


def test_several_questions_go_out_in_one_round_and_only_the_open_ones_again(stateless):
    first = stateless.call("test_input_required_result_multiple_inputs")["result"]
    assert sorted(first["inputRequests"]) == ["client_roots", "greeting", "user_name"]
    partial = stateless.call("test_input_required_result_multiple_inputs",
                          inputResponses={"user_name": accept({"name": "Al"})},
                          requestState=first["requestState"])["result"]
    assert sorted(partial["inputRequests"]) == ["client_roots", "greeting"]
    done = stateless.call("test_input_required_result_multiple_inputs",
                       inputResponses={"greeting": {**SAMPLED, "content": {"type": "text", "text": "Hi"}},
                                       "client_roots": ROOTS}, requestState=partial["requestState"])
    assert text_of(done) == "Hi Al (1 roots)"


def test_the_tools_round_state_travels_in_the_request_state(stateless):
    first = stateless.call("test_input_required_result_request_state")["result"]
    retry = stateless.call("test_input_required_result_request_state", inputResponses={"confirm": accept({"ok": True})},
                        requestState=first["requestState"])
    assert text_of(retry) == "state-ok: confirmed=True"


def test_a_missing_or_wrong_answer_asks_again_and_extra_answers_are_ignored(stateless):
    wrong = stateless.call("test_input_required_result_elicitation", inputResponses={"wrong_key": accept({"x": 1})})
    assert wrong["result"]["resultType"] == "input_required"
    assert list(wrong["result"]["inputRequests"]) == ["user_name"]
    extra = stateless.call("test_input_required_result_elicitation", inputResponses={
        "user_name": accept({"name": "Alice"}), "unknown_extra_key": accept({"foo": "bar"})})
    assert text_of(extra) == "Hello, Alice!"


@pytest.mark.parametrize("responses", [None, [], {"user_name": 12345}, {"user_name": {"action": "maybe"}},
                                       {"user_name": {"action": "accept", "content": "Alice"}}])
def test_malformed_input_responses_are_invalid_params(stateless, responses):
    response = stateless.call("test_input_required_result_elicitation", inputResponses=responses)
    assert response["error"]["code"] == -32602, response
    assert response["id"] == 1


def test_an_undeclared_capability_is_32021_naming_it_never_an_input_request(stateless):
    response = stateless.call("test_missing_capability", capabilities={"elicitation": {}})
    assert response["error"]["code"] == -32021
    assert response["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_url_elicitation_needs_the_url_mode_declared(server, stateless):
    @tool(name="visit_page", input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def visit_page(ctx) -> str:
        """Send the user to a page."""
        return str(ctx.ask_all([InputRequest.elicitation_url("Sign in", "https://example.com/a", key="visit")]))

    server.registry.add_function(visit_page)
    refused = stateless.call("visit_page", capabilities={"elicitation": {}})
    assert refused["error"]["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}
    asked = stateless.call("visit_page", capabilities={"elicitation": {"url": {}}})["result"]
    assert asked["inputRequests"]["visit"]["params"]["mode"] == "url"


def test_a_tool_asks_only_for_what_the_request_declared(stateless):
    result = stateless.call("test_input_required_result_capabilities", capabilities={"sampling": {}})["result"]
    assert [request["method"] for request in result["inputRequests"].values()] == ["sampling/createMessage"]


def test_a_prompt_asks_by_input_required_and_renders_on_the_retry(stateless):
    first = stateless("prompts/get", {"name": "test_input_required_result_prompt"})["result"]
    assert list(first["inputRequests"]) == ["user_context"]
    retry = stateless("prompts/get", {"name": "test_input_required_result_prompt",
                                   "inputResponses": {"user_context": accept({"context": "tests"})},
                                   "requestState": first["requestState"]})["result"]
    assert retry["messages"][0]["content"]["text"] == "Use this context: tests"


def first_state(client: Stateless, name: str = "test_input_required_result_request_state") -> str:
    """The requestState of a tool's first round."""
    return client.call(name)["result"]["requestState"]


def refusal(response: dict[str, Any]) -> str:
    """The reason of a -32602 requestState refusal."""
    assert response["error"]["code"] == -32602, response
    assert response["error"]["message"].startswith("Invalid requestState: ")
    return response["error"]["data"]["reason"]


CONFIRMED = {"confirm": accept({"ok": True})}


def test_a_state_replayed_by_another_principal_is_refused(server):
    state = first_state(Stateless(server, principal="alice"))
    response = Stateless(server, principal="bob").call("test_input_required_result_request_state",
                                                       inputResponses=CONFIRMED, requestState=state)
    assert refusal(response) == "principal"


def test_a_state_moved_to_another_tool_is_refused(stateless):
    state = first_state(stateless)
    response = stateless.call("test_input_required_result_tampered_state", inputResponses=CONFIRMED, requestState=state)
    assert refusal(response) == "target"


def test_a_tampered_state_is_refused(stateless):
    state = first_state(stateless, "test_input_required_result_tampered_state")
    response = stateless.call("test_input_required_result_tampered_state", inputResponses=CONFIRMED,
                           requestState=state + "-TAMPERED")
    assert refusal(response) == "tampered"


def test_an_expired_state_is_refused(server, stateless):
    state = first_state(stateless)
    codec = server.services.request_state()
    minted_clock = codec.clock
    codec.clock = lambda: minted_clock() + server.settings.request_state_ttl_s + 1
    response = stateless.call("test_input_required_result_request_state", inputResponses=CONFIRMED, requestState=state)
    assert refusal(response) == "expired"


def test_answers_that_would_take_the_next_state_past_its_bound_are_invalid_params(make_server, registry):
    small = Stateless(make_server({"MCP_REQUEST_STATE_MAX_BYTES": "2048"}, registry=registry))
    first = small.call("test_input_required_result_multi_round")["result"]
    response = small.call("test_input_required_result_multi_round", requestState=first["requestState"],
                          inputResponses={"step1": accept({"name": "x" * 4096})})
    assert response["error"]["code"] == -32602  # the client's answers, not an internal error
    assert response["error"]["data"] == {"reason": "too_large"}
    assert "MCP_REQUEST_STATE_MAX_BYTES" in response["error"]["message"]


def test_a_round_state_too_large_to_carry_is_an_internal_error_that_names_it(make_server, registry):
    @tool(name="hoarder", input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def hoarder(ctx) -> str:
        """Keep too much in the round state, then ask."""
        ctx.round_state = "x" * 4096
        return str(ctx.list_roots(key="r"))

    small = Stateless(make_server({"MCP_REQUEST_STATE_MAX_BYTES": "2048"}, registry=registry))
    small.server.registry.add_function(hoarder)
    error = small.call("hoarder")["error"]
    assert error["code"] == -32603
    assert "round_state" in error["message"] and "MCP_REQUEST_STATE_MAX_BYTES" in error["message"]


def test_workers_with_the_same_key_accept_each_others_states(make_server, registry):
    environ = {"MCP_REQUEST_STATE_KEY": "ab" * 32}
    minted_by = Stateless(make_server(environ, registry=registry))
    opened_by = Stateless(make_server(environ, registry=Registry.discover(plugins=FIXTURES)))
    state = first_state(minted_by)
    assert text_of(opened_by.call("test_input_required_result_request_state", inputResponses=CONFIRMED,
                                  requestState=state)) == "state-ok: confirmed=True"


def test_without_a_key_or_redis_each_process_mints_with_its_own_key(make_server, registry):
    state = first_state(Stateless(make_server(registry=registry)))
    other = Stateless(make_server(registry=Registry.discover(plugins=FIXTURES)))
    assert refusal(other.call("test_input_required_result_request_state", inputResponses=CONFIRMED,
                              requestState=state)) == "unknown_key"


def test_a_resource_reader_may_ask_too(server, stateless):
    @resource("test://asking", name="asking")
    def asking(ctx) -> str:
        """Ask which part to read."""
        return ctx.elicit("Which part?", {"type": "object", "properties": {"part": {"type": "string"}}},
                          key="part")["content"]["part"]

    server.registry.add_function(asking)
    first = stateless("resources/read", {"uri": "test://asking"})["result"]
    assert list(first["inputRequests"]) == ["part"]
    retry = stateless("resources/read", {"uri": "test://asking", "inputResponses": {"part": accept({"part": "intro"})},
                                      "requestState": first["requestState"]})["result"]
    assert retry["contents"] == [{"uri": "test://asking", "text": "intro"}]


def test_asking_outside_the_three_methods_is_refused_without_input_required(server, stateless):
    @tool(name="nested", input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def nested(ctx) -> str:
        """Pretend to be another method, then ask."""
        ctx.method = "completion/complete"
        return str(ctx.list_roots(key="r"))

    server.registry.add_function(nested)
    result = stateless.call("nested")["result"]
    assert result["isError"] is True
    assert "only within tools/call, prompts/get and resources/read" in result["content"][0]["text"]


def test_a_legacy_session_ignores_input_responses_and_request_state(make_rpc):
    rpc = make_rpc("2025-11-25")
    response = rpc.request("tools/call", {"name": "test_missing_capability", "arguments": {},
                                          "inputResponses": {"hello": SAMPLED}, "requestState": "forged"})
    # As before 2026-07-28: the session declared no sampling, so the tool fails as a tool.
    assert response["result"]["isError"] is True
    assert "'sampling' capability" in response["result"]["content"][0]["text"]

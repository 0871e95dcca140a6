"""ctx.consume_answers(): a tool's last input round works once, replayed or not, and answers need a state to pass it.

The tool is tests/e2e/plugins/stateless_tools.py's charge_after_confirmation, which appends one line per charge to
the file MCP_TEST_CHARGE_LOG names; requests are dispatched as the 2026-07-28 wire does (test_input_rounds.Stateless).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gevent
import pytest
from gevent.event import Event

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.messages import parse_body
from mcp_tools import Registry, tool
from tests.protocol.conftest import Rpc
from tests.protocol.test_input_rounds import WAIT_S, Stateless, accept
from tests.support.tasks_client import Client

TOOL = "charge_after_confirmation"
PLUGINS = ["tests.e2e.plugins.stateless_tools"]
CONFIRMED = {"confirm": accept({"confirm": True})}
REPLAYS = 5


@pytest.fixture
def charges(tmp_path) -> Path:
    """The file the tool appends a line to for each charge."""
    return tmp_path / "charges"


@pytest.fixture
def stateless(make_server, charges) -> Stateless:
    """A stateless client of a server with the charging tool."""
    environ = {"MCP_TEST_CHARGE_LOG": str(charges)}
    return Stateless(make_server(environ, registry=Registry.discover(plugins=PLUGINS)))


def charged(charges: Path) -> int:
    """How many charges the tool made."""
    return len(charges.read_text().splitlines()) if charges.exists() else 0


def charge(client: Stateless, request_id: int = 1, **params: Any) -> dict[str, Any]:
    """tools/call the charging tool for 5 cents, with extra params (inputResponses, requestState)."""
    return client("tools/call", {"name": TOOL, "arguments": {"amount": 5}, **params}, request_id=request_id)


def used(response: dict[str, Any]) -> bool:
    """Whether a response is the refusal of a requestState already used."""
    error = response.get("error") or {}
    return error.get("code") == -32602 and (error.get("data") or {}).get("reason") == "used"


def test_a_replayed_last_round_charges_once_and_each_replay_is_refused_as_used(stateless, charges):
    state = charge(stateless)["result"]["requestState"]
    assert charge(stateless, 2, inputResponses=CONFIRMED, requestState=state)["result"]["content"][0]["text"] \
        == "charged 5"
    for request_id in range(3, 3 + REPLAYS):
        replay = charge(stateless, request_id, inputResponses=CONFIRMED, requestState=state)
        assert used(replay), replay
        assert replay["id"] == request_id
        assert replay["error"]["message"].startswith("Invalid requestState: it was already used")
    assert charged(charges) == 1


def test_a_state_the_client_re_encoded_does_not_charge_again(stateless, charges):
    state = charge(stateless)["result"]["requestState"]
    charge(stateless, 2, inputResponses=CONFIRMED, requestState=state)
    # Base64 decoders skip what is not base64: the same sealed bytes under another spelling are the same state.
    head, tail = state[:-8], state[-8:]
    for variant in (head + "!" + tail, state + "=", head + "\n" + tail):
        response = charge(stateless, 3, inputResponses=CONFIRMED, requestState=variant)
        assert "error" in response, response
    assert charged(charges) == 1


def test_answers_sent_without_a_request_state_are_asked_again_and_charge_only_on_the_retry(stateless, charges):
    for request_id in range(1, 1 + REPLAYS):
        asked = charge(stateless, request_id, inputResponses=CONFIRMED)["result"]
        assert asked["resultType"] == "input_required", asked
        assert list(asked["inputRequests"]) == ["confirm"]
    assert charged(charges) == 0
    done = charge(stateless, 9, inputResponses=CONFIRMED, requestState=asked["requestState"])
    assert done["result"]["content"][0]["text"] == "charged 5"
    assert used(charge(stateless, 10, inputResponses=CONFIRMED, requestState=asked["requestState"]))
    assert charged(charges) == 1


def test_an_earlier_rounds_state_with_every_answer_is_refused_once_the_request_was_consumed(stateless):
    made: list[str] = []

    @tool(name="ship_order", input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def ship_order(ctx) -> str:
        """Ask where, then confirm, then ship once."""
        where = ctx.elicit("Where to?", {"type": "object"}, key="address")["content"]["city"]
        ctx.elicit(f"Ship to {where}?", {"type": "object"}, key="confirm")
        ctx.consume_answers()
        made.append(where)
        return f"shipped to {where}"

    stateless.server.registry.add_function(ship_order)
    first = stateless.call("ship_order")["result"]
    address = {"address": accept({"city": "Oslo"})}
    second = stateless.call("ship_order", 2, inputResponses=address, requestState=first["requestState"])["result"]
    assert list(second["inputRequests"]) == ["confirm"]
    final = stateless.call("ship_order", 3, inputResponses={"confirm": accept({})}, requestState=second["requestState"])
    assert final["result"]["content"][0]["text"] == "shipped to Oslo"
    # The first round's state, with both answers at once, is the same request: refused before the tool runs.
    every_answer = {**address, "confirm": accept({})}
    assert used(stateless.call("ship_order", 4, inputResponses=every_answer, requestState=first["requestState"]))
    assert used(stateless.call("ship_order", 5, inputResponses=address, requestState=first["requestState"]))
    assert made == ["Oslo"]


def test_a_round_that_ran_while_another_consumed_the_request_gets_no_new_state(stateless):
    made: list[str] = []
    release = Event()

    @tool(name="slow_ship", input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def slow_ship(ctx) -> str:
        """Ask where, look it up (slowly, when told to), confirm, then ship once."""
        where = ctx.elicit("Where to?", {"type": "object"}, key="address")["content"]
        if where.get("slow"):
            release.wait(WAIT_S)
        ctx.elicit("Sure?", {"type": "object"}, key="confirm")
        ctx.consume_answers()
        made.append(where["city"])
        return "shipped"

    stateless.server.registry.add_function(slow_ship)
    first = stateless.call("slow_ship")["result"]["requestState"]
    slow = gevent.spawn(stateless.call, "slow_ship", 2, inputResponses={"address": accept({"city": "Oslo", "slow": 1})},
                        requestState=first)
    gevent.sleep(0)  # the slow round has checked its state and is looking the address up
    done = stateless.call("slow_ship", 3, requestState=first,
                          inputResponses={"address": accept({"city": "Oslo"}), "confirm": accept({})})
    assert done["result"]["content"][0]["text"] == "shipped"
    release.set()
    # A state minted now would outlive the consumed record by the time the slow round took, so none is.
    late = slow.get(timeout=WAIT_S)
    assert used(late), late
    assert made == ["Oslo"]


def test_a_tool_that_asks_after_consume_answers_fails_instead_of_minting_a_state(stateless):
    @tool(name="ask_late", input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def ask_late(ctx) -> str:
        """Confirm, consume, then ask again: a state minted now would let the effect run once more."""
        ctx.elicit("Sure?", {"type": "object"}, key="first")
        ctx.consume_answers()
        ctx.elicit("Receipt?", {"type": "object"}, key="second")
        return "done"

    stateless.server.registry.add_function(ask_late)
    state = stateless.call("ask_late")["result"]["requestState"]
    result = stateless.call("ask_late", 2, inputResponses={"first": accept({})}, requestState=state)["result"]
    assert result["isError"] is True
    assert "resultType" not in result or result["resultType"] == "complete"


def test_consuming_twice_in_one_run_is_one_use(stateless):
    @tool(name="two_effects", input_schema={"type": "object", "properties": {}, "additionalProperties": False})
    def two_effects(ctx) -> str:
        """Consume before each of two effects."""
        ctx.elicit("Sure?", {"type": "object"}, key="ok")
        ctx.consume_answers()
        ctx.consume_answers()
        return "both"

    stateless.server.registry.add_function(two_effects)
    state = stateless.call("two_effects")["result"]["requestState"]
    done = stateless.call("two_effects", 2, inputResponses={"ok": accept({})}, requestState=state)
    assert done["result"]["content"][0]["text"] == "both"


def test_a_full_record_refuses_with_32004_and_charges_nothing(make_server, charges):
    environ = {"MCP_TEST_CHARGE_LOG": str(charges), "MCP_REQUEST_STATE_USED_MAX": "1"}
    client = Stateless(make_server(environ, registry=Registry.discover(plugins=PLUGINS)))
    for request_id in (1, 3):
        state = charge(client, request_id)["result"]["requestState"]
        last = charge(client, request_id + 1, inputResponses=CONFIRMED, requestState=state)
    assert last["error"]["code"] == -32004, last
    assert "MCP_REQUEST_STATE_USED_MAX" in last["error"]["message"]
    assert charged(charges) == 1


def test_in_a_2025_session_consume_answers_is_a_no_op(make_server, charges):
    server = make_server({"MCP_TEST_CHARGE_LOG": str(charges)}, registry=Registry.discover(plugins=PLUGINS))
    rpc = Rpc(server, server.open_session("sse"))
    rpc.initialize("2025-11-25", capabilities={"elicitation": {}})
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": TOOL, "arguments": {"amount": 5}}}
    (greenlet,), _ = server.accept(rpc.session, parse_body(dumps(message)), rpc.sent.append)
    with gevent.Timeout(WAIT_S, AssertionError("no elicitation/create request was sent")):
        while not (asked := [m for m in rpc.sent if m.get("method") == "elicitation/create"]):
            gevent.sleep(0.001)
    rpc(dumps({"jsonrpc": "2.0", "id": asked[0]["id"], "result": {"action": "accept", "content": {"confirm": True}}}))
    greenlet.join(timeout=WAIT_S)
    assert greenlet.value["result"]["content"][0]["text"] == "charged 5"
    assert charged(charges) == 1


def test_consumed_before_start_task_one_confirmation_starts_one_task_whose_run_consumes_nothing(server):
    shipped: list[str] = []

    @tool(name="ship_later", input_schema={"type": "object", "properties": {}, "additionalProperties": False},
          task="optional", ask_before_task=True)
    def ship_later(ctx) -> str:
        """Confirm, consume, become a task, ship."""
        ctx.elicit("Ship?", {"type": "object"}, key="ok")
        ctx.consume_answers()  # in the task's own run, from the top again: a no-op
        ctx.start_task()
        shipped.append("box")
        return "shipped"

    server.registry.add_function(ship_later)
    alice = Client(server, "alice")
    state = alice.call("ship_later")["requestState"]
    task_id = alice("tools/call", name="ship_later", arguments={}, inputResponses={"ok": accept({})},
                    requestState=state)["result"]["taskId"]
    assert alice.until(task_id)["result"]["content"][0]["text"] == "shipped"
    replay = alice("tools/call", name="ship_later", arguments={}, inputResponses={"ok": accept({})},
                   requestState=state)
    assert used(replay), replay
    assert len(server.tasks.store.tasks) == 1
    assert shipped == ["box"]

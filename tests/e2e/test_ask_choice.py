"""mcp_tools/ask_choice.py with the official Python SDK client answering its elicitation, on both eras.

2025 wires (legacy SSE and Streamable HTTP): the question is an elicitation/create request on the session;
MCP 2026-07-28: an input_required round the client answers and retries. Either way the callback sees the
question and the options, and the tool returns what the user picked.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from tests.e2e.sdk_sessions import REQUEST_TIMEOUT_S, feature_env, open_session
from tests.e2e.server_process import ServerProcess

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

ARGUMENTS = {"question": "Which colour?", "options": ["red", "teal", "gold"]}


class User:
    """An elicitation callback that gives one answer and keeps every question it was asked."""

    def __init__(self, action: str = "accept", choice: str = "teal") -> None:
        self.action = action
        self.choice = choice
        self.asked: list[tuple[str, Any]] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        """Answer with the action (and, when accepting, the choice)."""
        self.asked.append((params.message, params.requested_schema["properties"]["choice"]["enum"]))
        content = {"choice": self.choice} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)


def texts(result: types.CallToolResult) -> list[str]:
    """The text of each block of a tool result."""
    return [block.text for block in result.content]


@pytest.fixture(scope="module")
def server():
    """A gunicorn with the feature tools (the SDK session helper waits for the stream with one of them)."""
    with ServerProcess(env=feature_env()) as process:
        yield process


async def test_a_2025_session_gets_the_users_pick(server, transport):
    user = User()
    async with open_session(transport, server.url, elicitation_callback=user) as (session, _):
        result = await session.call_tool("ask_choice", ARGUMENTS)
    assert user.asked == [("Which colour?", ["red", "teal", "gold"])]
    assert result.is_error is False
    assert texts(result) == ["teal"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_2026_client_gets_the_users_pick_or_refusal(server, action):
    user = User(action=action)
    async with Client(server.url, mode="2026-07-28", read_timeout_seconds=REQUEST_TIMEOUT_S,
                      elicitation_callback=user) as client:
        assert client.protocol_version == "2026-07-28"
        result = await client.call_tool("ask_choice", ARGUMENTS)
    assert user.asked == [("Which colour?", ["red", "teal", "gold"])]
    assert result.is_error is False
    assert texts(result) == [f"No choice: the user chose to {action}."]


async def test_a_2026_client_gets_the_pick_after_one_input_round(server):
    user = User()
    async with Client(server.url, mode="2026-07-28", read_timeout_seconds=REQUEST_TIMEOUT_S,
                      elicitation_callback=user) as client:
        result = await client.call_tool("ask_choice", ARGUMENTS)
    assert user.asked == [("Which colour?", ["red", "teal", "gold"])]
    assert texts(result) == ["teal"]


async def test_an_answer_outside_the_options_is_an_error_result(server):
    user = User(choice="purple")
    async with Client(server.url, mode="2026-07-28", read_timeout_seconds=REQUEST_TIMEOUT_S,
                      elicitation_callback=user) as client:
        result = await client.call_tool("ask_choice", ARGUMENTS)
    assert result.is_error is True
    assert texts(result) == ["The client's answer is not one of the options."]

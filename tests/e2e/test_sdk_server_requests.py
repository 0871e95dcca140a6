"""The official SDK client against the real server, over both transports: requests the server sends the client.

Sampling, elicitation and roots go out on the session's stream; the SDK's callback answers
with a POST that wakes the waiting tool. Checked: what the callback received, what the
tool made of the answer, a client without the capability, a client error, and a timeout.
"""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest

from tests.e2e.sdk_sessions import dump, feature_env, open_session
from tests.e2e.server_process import ServerProcess
from tests.support.waiting import wait_until_async

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

CLIENT_TIMEOUT_S = 1
ELICITED_SCHEMA = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}


@pytest.fixture(scope="module")
def request_server():
    """A gunicorn with the conformance fixtures and the feature tools."""
    with ServerProcess(env=feature_env()) as process:
        yield process


@pytest.fixture(scope="module")
def impatient_server():
    """The same, but it waits only CLIENT_TIMEOUT_S for the client to answer its requests."""
    with ServerProcess(env=feature_env(MCP_CLIENT_REQUEST_TIMEOUT_S=str(CLIENT_TIMEOUT_S))) as process:
        yield process


def text_of(result: types.CallToolResult) -> str:
    """The one text block of a tool result."""
    (block,) = result.content
    return block.text


class SamplingClient:
    """A sampling callback that keeps what it was asked and answers with a canned model reply."""

    def __init__(self, reply: str = "Paris is the capital of France.") -> None:
        self.reply = reply
        self.requests: list[dict] = []

    async def __call__(self, context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.requests.append(dump(params))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=self.reply), model="test-model",
            stop_reason="endTurn",
        )


# sampling
async def test_sampling_sends_the_prompt_and_the_tool_uses_the_models_answer(request_server, transport):
    sampling = SamplingClient()
    async with open_session(transport, request_server.url, sampling_callback=sampling) as (session, _):
        result = await session.call_tool("test_sampling", {"prompt": "What is the capital of France?"})
    assert sampling.requests == [{
        "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
        "maxTokens": 100,
    }]
    assert result.is_error is False
    assert text_of(result) == "LLM response: Paris is the capital of France."


async def test_concurrent_sampling_calls_each_get_their_own_answer(request_server, transport):
    async def answer_in_reverse(context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompt = params.messages[0].content.text
        # Answer the first prompt last, so the answers cross on the wire.
        if prompt == "first":
            await anyio.sleep(0.2)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=prompt[::-1]),
                                         model="test-model")

    results: dict[str, str] = {}
    async with open_session(transport, request_server.url, sampling_callback=answer_in_reverse) as (session, _):

        async def ask(prompt: str) -> None:
            results[prompt] = text_of(await session.call_tool("test_sampling", {"prompt": prompt}))

        async with anyio.create_task_group() as group:
            for prompt in ("first", "second", "third"):
                group.start_soon(ask, prompt)
    assert results == {"first": "LLM response: tsrif", "second": "LLM response: dnoces",
                       "third": "LLM response: driht"}


async def test_a_client_without_sampling_gets_a_clear_error_result(request_server, transport):
    async with open_session(transport, request_server.url) as (session, _):
        result = await session.call_tool("test_sampling", {"prompt": "anyone there?"})
    assert result.is_error is True
    assert text_of(result) == "The client did not declare the 'sampling' capability, so this tool cannot use it"


async def test_a_client_that_answers_sampling_with_an_error_gets_an_error_result(request_server, transport):
    async def refuse(context, params) -> types.ErrorData:
        return types.ErrorData(code=-1, message="User rejected sampling request")

    async with open_session(transport, request_server.url, sampling_callback=refuse) as (session, _):
        result = await session.call_tool("test_sampling", {"prompt": "Write a poem"})
        after = await session.call_tool("test_simple_text", {})
    assert result.is_error is True
    assert text_of(result) == "The client refused sampling/createMessage: User rejected sampling request"
    assert after.is_error is False


# elicitation
async def test_elicitation_sends_the_schema_and_the_tool_gets_the_users_answer(request_server, transport):
    asked: list[types.ElicitRequestParams] = []

    async def answer(context, params) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    async with open_session(transport, request_server.url, elicitation_callback=answer) as (session, _):
        result = await session.call_tool("test_elicitation", {"message": "Who are you?"})
    (params,) = asked
    assert params.message == "Who are you?"
    assert dump(params)["requestedSchema"] == ELICITED_SCHEMA
    assert result.is_error is False
    assert text_of(result) == "User response: action=accept, content={'username': 'ada', 'email': 'ada@example.com'}"


async def test_a_declined_elicitation_reaches_the_tool_as_declined(request_server, transport):
    async def decline(context, params) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with open_session(transport, request_server.url, elicitation_callback=decline) as (session, _):
        result = await session.call_tool("test_elicitation", {"message": "Who are you?"})
    assert text_of(result) == "User response: action=decline, content=None"


async def test_elicitation_defaults_reach_the_client_as_declared(request_server, transport):
    asked: list = []

    async def accept_defaults(context, params) -> types.ElicitResult:
        asked.append(dump(params)["requestedSchema"])
        return types.ElicitResult(action="accept", content={"name": "John Doe", "age": 30})

    async with open_session(transport, request_server.url, elicitation_callback=accept_defaults) as (session, _):
        result = await session.call_tool("test_elicitation_sep1034_defaults", {})
    (schema,) = asked
    defaults = {name: field["default"] for name, field in schema["properties"].items()}
    assert defaults == {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True}
    assert text_of(result) == "Elicitation completed: action=accept, content={'name': 'John Doe', 'age': 30}"


async def test_a_client_without_elicitation_gets_a_clear_error_result(request_server, transport):
    async with open_session(transport, request_server.url) as (session, _):
        result = await session.call_tool("test_elicitation", {"message": "Who are you?"})
    assert result.is_error is True
    assert text_of(result) == "The client did not declare the 'elicitation' capability, so this tool cannot use it"


# roots
async def test_the_clients_roots_reach_the_tool(request_server, transport):
    async def roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[
            types.Root(uri="file:///home/ada/project", name="project"),
            types.Root(uri="file:///srv/shared"),
        ])

    async with open_session(transport, request_server.url, list_roots_callback=roots) as (session, _):
        result = await session.call_tool("list_client_roots", {})
    assert result.is_error is False
    assert result.structured_content == {"roots": [
        {"uri": "file:///home/ada/project", "name": "project"},
        {"uri": "file:///srv/shared"},
    ]}


async def test_a_client_without_roots_gets_a_clear_error_result(request_server, transport):
    async with open_session(transport, request_server.url) as (session, _):
        result = await session.call_tool("list_client_roots", {})
    assert result.is_error is True
    assert text_of(result) == "The client did not declare the 'roots' capability, so this tool cannot use it"


# timeout
async def test_a_client_that_never_answers_gets_a_timeout_result_and_a_cancellation(impatient_server, transport):
    cancelled: list[str] = []

    async def never_answer(context, params) -> types.CreateMessageResult:
        try:
            await anyio.sleep_forever()
        finally:
            # The server's notifications/cancelled interrupts this callback.
            cancelled.append("cancelled")
        raise AssertionError("unreachable")

    async with open_session(transport, impatient_server.url, sampling_callback=never_answer) as (session, _):
        result = await session.call_tool("test_sampling", {"prompt": "Are you there?"})
        await wait_until_async(lambda: cancelled, "the server to cancel its sampling request")
        after = await session.call_tool("test_simple_text", {})
    assert result.is_error is True
    assert text_of(result) == f"The client did not answer sampling/createMessage within {CLIENT_TIMEOUT_S} s"
    assert after.is_error is False


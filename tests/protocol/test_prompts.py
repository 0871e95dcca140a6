"""prompts/list and prompts/get: descriptions, rendering, content types, and every argument error."""

from __future__ import annotations

import base64

import pytest

from mcp_tools import PromptArgument, Registry, ToolError, prompt
from tests.conformance.fixtures import RED_PIXEL_PNG

SECRET = "secret-detail /srv/app/credentials.py line 42"


@prompt(arguments=[PromptArgument("mood", "How to say no.", required=True)])
def refusing_prompt(mood: str) -> str:
    """A prompt that refuses some arguments with a message meant for the client."""
    if mood == "grumpy":
        raise ToolError("grumpy is not a mood this prompt does")
    return f"mood: {mood}"


@prompt()
def exploding_prompt() -> str:
    """A prompt that fails unexpectedly."""
    raise RuntimeError(SECRET)


@prompt(arguments=[PromptArgument("topic", "What about.")])
def contextual_prompt(ctx, topic: str = "nothing") -> dict:
    """A prompt that reads the request context and returns one message."""
    return {"role": "assistant", "content": {"type": "text", "text": f"{topic} for {ctx.session_id}"}}


@pytest.fixture
def registry() -> Registry:
    """The shipped prompts, the conformance fixtures, and this module's prompts."""
    registry = Registry.discover(plugins=["tests.conformance.fixtures"])
    for fn in (refusing_prompt, exploding_prompt, contextual_prompt):
        registry.add_function(fn)
    return registry


def get(rpc, name, arguments=None):
    """The response to prompts/get."""
    params = {"name": name} if arguments is None else {"name": name, "arguments": arguments}
    return rpc.request("prompts/get", params, request_id=4)


def user_text(text: str) -> dict:
    """One user message with one text block."""
    return {"role": "user", "content": {"type": "text", "text": text}}


# listing
def test_prompts_list_describes_each_prompt_with_its_arguments(make_rpc, server):
    result = make_rpc("2025-06-18").request("prompts/list")["result"]
    assert [p["name"] for p in result["prompts"]] == list(server.registry.prompts)
    by_name = {p["name"]: p for p in result["prompts"]}
    assert by_name["test_prompt_with_arguments"] == {
        "name": "test_prompt_with_arguments",
        "description": "A prompt that repeats its two arguments.",
        "arguments": [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ],
    }
    assert by_name["test_simple_prompt"] == {"name": "test_simple_prompt", "description": "A prompt without arguments.",
                                             "arguments": []}


# rendering
def test_a_prompt_without_arguments_renders_one_user_message(make_rpc):
    response = get(make_rpc("2025-06-18"), "test_simple_prompt")
    assert response == {"jsonrpc": "2.0", "id": 4, "result": {
        "messages": [user_text("This is a simple prompt for testing.")],
        "description": "A prompt without arguments.",
    }}


def test_empty_arguments_count_as_none(make_rpc):
    response = get(make_rpc("2025-06-18"), "test_simple_prompt", {})
    assert response["result"]["messages"] == [user_text("This is a simple prompt for testing.")]


def test_arguments_are_substituted(make_rpc):
    result = get(make_rpc("2025-06-18"), "test_prompt_with_arguments", {"arg1": "a", "arg2": "b"})["result"]
    assert result["messages"] == [user_text("Prompt with arguments: arg1='a', arg2='b'")]


def test_an_optional_argument_may_be_left_out(make_rpc):
    rpc = make_rpc("2025-06-18")
    without = get(rpc, "code_review", {"code": "x = 1"})["result"]["messages"][0]["content"]["text"]
    with_language = get(rpc, "code_review", {"code": "x = 1", "language": "python"})["result"]
    assert without.startswith("Please review this code.")
    assert with_language["messages"][0]["content"]["text"].endswith("```python\nx = 1\n```")


def test_image_content_carries_the_exact_base64(make_rpc):
    messages = get(make_rpc("2025-06-18"), "test_prompt_with_image")["result"]["messages"]
    assert messages == [
        {"role": "user", "content": {"type": "image", "data": base64.b64encode(RED_PIXEL_PNG).decode(),
                                     "mimeType": "image/png"}},
        user_text("Please analyze the image above."),
    ]


def test_embedded_resource_content_carries_the_requested_uri(make_rpc):
    messages = get(make_rpc("2025-06-18"), "test_prompt_with_embedded_resource", {"resourceUri": "test://x/1"})
    assert messages["result"]["messages"] == [
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": "test://x/1", "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
        user_text("Please process the embedded resource above."),
    ]


def test_a_prompt_with_ctx_gets_the_request_context_and_may_return_one_message(make_rpc):
    rpc = make_rpc("2025-06-18")
    messages = get(rpc, "contextual_prompt", {"topic": "tea"})["result"]["messages"]
    assert messages == [{"role": "assistant", "content": {"type": "text", "text": f"tea for {rpc.session.id}"}}]


# argument errors
def test_a_missing_required_argument_is_invalid_params_naming_it(make_rpc):
    response = get(make_rpc("2025-06-18"), "test_prompt_with_arguments", {"arg2": "b"})
    assert response["error"] == {
        "code": -32602,
        "message": "Missing required argument(s) for prompt 'test_prompt_with_arguments': arg1",
        "data": {"prompt": "test_prompt_with_arguments", "missing": ["arg1"]},
    }


def test_every_missing_argument_is_named_when_none_are_given(make_rpc):
    response = get(make_rpc("2025-06-18"), "test_prompt_with_arguments")
    assert response["error"]["code"] == -32602
    assert response["error"]["data"]["missing"] == ["arg1", "arg2"]


def test_an_unknown_argument_is_invalid_params_naming_it(make_rpc):
    response = get(make_rpc("2025-06-18"), "code_review", {"code": "x", "colour": "red", "author": "me"})
    assert response["error"] == {
        "code": -32602,
        "message": "Unknown argument(s) for prompt 'code_review': author, colour",
        "data": {"prompt": "code_review", "unknown": ["author", "colour"]},
    }


@pytest.mark.parametrize("arguments", [["code"], "code=x", 3, {"code": 1}, {"code": None}, {"code": ["x"]}])
def test_arguments_must_be_an_object_of_strings(make_rpc, arguments):
    response = get(make_rpc("2025-06-18"), "code_review", arguments)
    assert response["error"]["code"] == -32602
    assert response["error"]["data"] == {"prompt": "code_review"}


@pytest.mark.parametrize("name", ["no_such_prompt", 7, None, ""])
def test_an_unknown_prompt_is_invalid_params(make_rpc, name):
    response = get(make_rpc("2025-06-18"), name)
    assert response["error"]["code"] == -32602
    assert response["error"]["data"] == {"prompt": name}


def test_prompts_get_without_name_is_invalid_params(make_rpc):
    assert make_rpc("2025-06-18").request("prompts/get", {})["error"]["code"] == -32602


def test_a_prompt_refusal_is_invalid_params_with_its_message(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert get(rpc, "refusing_prompt", {"mood": "grumpy"})["error"] == {
        "code": -32602, "message": "grumpy is not a mood this prompt does", "data": {"prompt": "refusing_prompt"}}
    assert get(rpc, "refusing_prompt", {"mood": "kind"})["result"]["messages"] == [user_text("mood: kind")]


def test_a_failing_prompt_is_internal_error_without_detail(make_rpc, mcp_log):
    response = get(make_rpc("2025-06-18"), "exploding_prompt")
    assert response["error"]["code"] == -32603
    assert response["error"]["data"]["prompt"] == "exploding_prompt"
    assert SECRET not in str(response)
    assert response["error"]["data"]["correlationId"] in mcp_log.text


def test_prompt_list_changes_reach_initialized_sessions(server, make_rpc):
    rpc = make_rpc("2025-06-18")
    stream = server.store.events.subscribe(rpc.session.id)
    server.registry.remove("prompt", "exploding_prompt")
    event = stream.get(timeout=0)
    assert event is not None and b'"notifications/prompts/list_changed"' in event[1]
    assert get(rpc, "exploding_prompt")["error"]["code"] == -32602

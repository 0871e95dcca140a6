"""The official SDK client against the real server, over both transports: prompts and their completion.

Every message is compared whole: text with the arguments substituted, the image's exact
base64, the embedded resource; argument errors are -32602 and name what is wrong.
"""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.conformance.fixtures import RED_PIXEL_PNG
from tests.e2e.sdk_sessions import (
    b64,
    dump,
    expected_registry,
    feature_env,
    list_every_page,
    rpc_error,
    session_to,
)
from tests.e2e.server_process import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

LANGUAGES = ["c", "cpp", "go", "java", "javascript", "python", "rust", "shell", "sql", "typescript"]


@pytest.fixture(scope="module")
def prompt_server():
    """A gunicorn with the conformance fixtures and the feature tools, two items per list page."""
    with ServerProcess(env=feature_env()) as process:
        yield process


async def test_prompts_list_pages_hold_every_prompt_once_with_its_arguments(prompt_server, transport):
    async with session_to(prompt_server, transport) as (session, _):
        prompts, cursors = await list_every_page(session.list_prompts, "prompts")
    assert [p.name for p in prompts] == list(expected_registry().prompts)
    assert cursors
    by_name = {p.name: dump(p) for p in prompts}
    assert by_name["code_review"] == {
        "name": "code_review",
        "description": "Review code for bugs, clarity and style, and suggest concrete fixes.",
        "arguments": [
            {"name": "code", "description": "The code to review.", "required": True},
            {"name": "language", "description": "The programming language, if not obvious.", "required": False},
        ],
    }
    assert by_name["test_simple_prompt"]["arguments"] == []


async def test_a_prompt_without_arguments_renders_its_text(prompt_server, transport):
    async with session_to(prompt_server, transport) as (session, _):
        result = await session.get_prompt("test_simple_prompt")
    assert dump(result.messages) == [
        {"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}
    ]
    assert result.description == "A prompt without arguments."


async def test_a_prompt_substitutes_its_arguments(prompt_server, transport):
    async with session_to(prompt_server, transport) as (session, _):
        result = await session.get_prompt("test_prompt_with_arguments", {"arg1": "alpha", "arg2": "beta"})
    assert dump(result.messages) == [
        {"role": "user", "content": {"type": "text", "text": "Prompt with arguments: arg1='alpha', arg2='beta'"}}
    ]


async def test_code_review_puts_the_code_and_language_in_its_message(prompt_server, transport):
    code = "def add(a, b):\n    return a - b"
    async with session_to(prompt_server, transport) as (session, _):
        with_language = await session.get_prompt("code_review", {"code": code, "language": "python"})
        without = await session.get_prompt("code_review", {"code": code})
    (message,) = dump(with_language.messages)
    assert message["role"] == "user"
    assert message["content"]["text"] == (
        "Please review this python code. Point out bugs first, then unclear or fragile parts, then style, "
        f"and suggest concrete fixes.\n\n```python\n{code}\n```"
    )
    assert dump(without.messages)[0]["content"]["text"].startswith("Please review this code.")


async def test_a_prompt_carries_an_image_with_its_exact_bytes(prompt_server, transport):
    async with session_to(prompt_server, transport) as (session, _):
        result = await session.get_prompt("test_prompt_with_image")
    assert dump(result.messages) == [
        {"role": "user", "content": {"type": "image", "data": b64(RED_PIXEL_PNG), "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
    ]


async def test_a_prompt_embeds_the_resource_named_by_its_argument(prompt_server, transport):
    async with session_to(prompt_server, transport) as (session, _):
        result = await session.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://doc/1"})
    assert dump(result.messages) == [
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": "test://doc/1", "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
        {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}},
    ]


async def test_a_missing_required_argument_is_invalid_params_naming_it(prompt_server, transport):
    async with session_to(prompt_server, transport) as (session, _):
        one_missing = await rpc_error(session.get_prompt, "test_prompt_with_arguments", {"arg1": "alpha"})
        code_missing = await rpc_error(session.get_prompt, "code_review", {"language": "go"})
    assert one_missing.code == -32602
    assert "arg2" in one_missing.message and "arg1" not in one_missing.message
    assert one_missing.data == {"prompt": "test_prompt_with_arguments", "missing": ["arg2"]}
    assert code_missing.code == -32602
    assert code_missing.data == {"prompt": "code_review", "missing": ["code"]}


async def test_an_unknown_argument_and_an_unknown_prompt_are_invalid_params(prompt_server, transport):
    async with session_to(prompt_server, transport) as (session, _):
        extra = await rpc_error(session.get_prompt, "test_simple_prompt", {"surprise": "x"})
        unknown = await rpc_error(session.get_prompt, "no_such_prompt", None)
    assert extra.code == -32602
    assert extra.data == {"prompt": "test_simple_prompt", "unknown": ["surprise"]}
    assert unknown.code == -32602
    assert "no_such_prompt" in unknown.message


# completion of prompt arguments
@pytest.mark.parametrize(
    ("typed", "values"),
    [("", LANGUAGES), ("j", ["java", "javascript"]), ("PY", ["python"]), ("s", ["shell", "sql"]), ("zig", [])],
)
async def test_code_review_language_completes_from_what_was_typed(prompt_server, transport, typed, values):
    ref = types.PromptReference(name="code_review")
    async with session_to(prompt_server, transport) as (session, _):
        result = await session.complete(ref, {"name": "language", "value": typed})
    assert dump(result.completion) == {"values": values, "total": len(values), "hasMore": False}


async def test_completing_an_unknown_prompt_or_argument_is_invalid_params(prompt_server, transport):
    async with session_to(prompt_server, transport) as (session, _):
        with pytest.raises(MCPError) as unknown_prompt:
            await session.complete(types.PromptReference(name="no_such_prompt"), {"name": "x", "value": ""})
        with pytest.raises(MCPError) as unknown_argument:
            await session.complete(types.PromptReference(name="code_review"), {"name": "colour", "value": ""})
    assert unknown_prompt.value.error.code == -32602
    assert unknown_argument.value.error.code == -32602
    assert "colour" in unknown_argument.value.error.message

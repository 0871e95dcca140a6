"""The conformance suite's input-required-* fixtures (MCP 2026-07-28 multi round-trip requests), as a plugin.

Load beside the others (tests/conformance/runner.py's FIXTURE_PLUGINS lists all three). test_missing_capability,
which server-stateless calls without sampling to get -32021, is in fixtures_2026.py.
Each is an ordinary tool or prompt that asks the client through ctx: in a 2025-era session the asks are
server-to-client requests; on the 2026-07-28 wire they become input_required results, answered by a retry.
The keys are the ones the suite expects.
"""

from __future__ import annotations

from mcp_tools import InputRequest, prompt, tool

NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}


def one_field(name: str, kind: str = "string") -> dict:
    """A requested schema with one required field."""
    return {"type": "object", "properties": {name: {"type": kind}}, "required": [name]}


def user_message(text: str) -> list[dict]:
    """One user text message, for sampling."""
    return [{"role": "user", "content": {"type": "text", "text": text}}]


def sampled_text(answer: dict) -> str:
    """The text of a CreateMessageResult (its first text block)."""
    content = answer.get("content")
    blocks = content if isinstance(content, list) else [content]
    return next((block.get("text", "") for block in blocks if isinstance(block, dict)), "")


def answered(answer: dict, field: str) -> object:
    """A field of an accepted elicitation's content (None when declined)."""
    content = answer.get("content") if answer.get("action") == "accept" else None
    return (content or {}).get(field)


@tool(input_schema=NO_ARGUMENTS)
def test_input_required_result_elicitation(ctx) -> str:
    """Ask the user's name (key user_name), then greet them."""
    answer = ctx.elicit("What is your name?", one_field("name"), key="user_name")
    return f"Hello, {answered(answer, 'name')}!"


@tool(input_schema=NO_ARGUMENTS)
def test_input_required_result_sampling(ctx) -> str:
    """Ask the client's model for the capital of France (key capital_question)."""
    answer = ctx.sample(user_message("What is the capital of France?"), 100, key="capital_question")
    return sampled_text(answer)


@tool(input_schema=NO_ARGUMENTS)
def test_input_required_result_list_roots(ctx) -> str:
    """Ask for the client's roots (key client_roots) and name them."""
    roots = ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(str(root.get("uri")) for root in roots)


def confirmed_with_state(ctx) -> str:
    """Carry a marker in round_state across the round, then report it with the confirmation."""
    if ctx.round_state is None:
        ctx.round_state = {"marker": "state-ok"}
    answer = ctx.elicit("Please confirm", one_field("ok", "boolean"), key="confirm")
    return f"{ctx.round_state['marker']}: confirmed={answered(answer, 'ok')}"


@tool(input_schema=NO_ARGUMENTS)
def test_input_required_result_request_state(ctx) -> str:
    """Ask for confirmation (key confirm); the retry's text shows the state carried in requestState."""
    return confirmed_with_state(ctx)


@tool(input_schema=NO_ARGUMENTS)
def test_input_required_result_tampered_state(ctx) -> str:
    """The same as the request-state fixture: the suite alters the requestState and expects an error."""
    return confirmed_with_state(ctx)


@tool(input_schema=NO_ARGUMENTS)
def test_input_required_result_multiple_inputs(ctx) -> str:
    """Ask three questions in one round: user_name, greeting and client_roots."""
    name, greeting, roots = ctx.ask_all([
        InputRequest.elicitation("What is your name?", one_field("name"), key="user_name"),
        InputRequest.sampling(user_message("Generate a greeting"), 50, key="greeting"),
        InputRequest.roots(key="client_roots"),
    ])
    return f"{sampled_text(greeting)} {answered(name, 'name')} ({len(roots)} roots)"


@tool(input_schema=NO_ARGUMENTS)
def test_input_required_result_multi_round(ctx) -> str:
    """Ask in two rounds: the name (step1), then the favourite colour (step2)."""
    name = ctx.elicit("Step 1: What is your name?", one_field("name"), key="step1")
    color = ctx.elicit("Step 2: What is your favorite color?", one_field("color"), key="step2")
    return f"{answered(name, 'name')} likes {answered(color, 'color')}"


@tool(input_schema=NO_ARGUMENTS)
def test_input_required_result_capabilities(ctx) -> str:
    """Ask only what the request's clientCapabilities allow: sampling and/or elicitation."""
    questions = []
    if ctx.client_supports("sampling"):
        questions.append(InputRequest.sampling(user_message("Say hello"), 20, key="hello"))
    if ctx.client_supports("elicitation"):
        questions.append(InputRequest.elicitation("What is your name?", one_field("name"), key="user_name"))
    if not questions:
        return "The client declared neither sampling nor elicitation"
    return f"{len(ctx.ask_all(questions))} answer(s)"


@prompt()
def test_input_required_result_prompt(ctx) -> str:
    """Ask what context the prompt should use (key user_context), then render it."""
    answer = ctx.elicit("What context should the prompt use?", one_field("context"), key="user_context")
    return f"Use this context: {answered(answer, 'context')}"

"""completion/complete: prompt arguments and template variables, the 100-value cap, and every bad reference."""

from __future__ import annotations

import itertools

import pytest

from mcp_tools import PromptArgument, Registry, prompt, resource_template


def count_forever(name: str, value: str):
    """An endless completer: the server must stop reading after what it needs."""
    return (f"{value}{n}" for n in itertools.count())


@prompt(arguments=[PromptArgument("n", "A number.")], complete=count_forever)
def endless(n: str = "") -> str:
    """A prompt whose argument has endless suggestions."""
    return n


@prompt(arguments=[PromptArgument("n", "A number.")],
        complete=lambda name, value: [str(i) for i in range(100)])
def exactly_hundred(n: str = "") -> str:
    """A prompt whose argument has exactly 100 suggestions."""
    return n


@prompt(arguments=[PromptArgument("n", "A number.")])
def no_completer(n: str = "") -> str:
    """A prompt without a completer."""
    return n


@resource_template("test://cities/{country}/{city}",
                   complete=lambda name, value, ctx: [f"{name}:{value}:{ctx.arguments.get('country', '-')}"])
def cities(country: str, city: str) -> str:
    """A template whose completer reads the arguments the client already chose."""
    return f"{city}, {country}"


@pytest.fixture
def registry() -> Registry:
    """The shipped code_review prompt, the conformance fixtures, and this module's completers."""
    registry = Registry.discover(plugins=["tests.conformance.fixtures"])
    for fn in (endless, exactly_hundred, no_completer, cities):
        registry.add_function(fn)
    return registry


def complete(rpc, ref, name, value="", context=None):
    """The response to completion/complete."""
    params = {"ref": ref, "argument": {"name": name, "value": value}}
    if context is not None:
        params["context"] = context
    return rpc.request("completion/complete", params, request_id=6)


def prompt_ref(name):
    """A ref/prompt reference."""
    return {"type": "ref/prompt", "name": name}


def template_ref(uri):
    """A ref/resource reference."""
    return {"type": "ref/resource", "uri": uri}


# values
def test_code_review_language_completes_from_its_prefix(make_rpc):
    response = complete(make_rpc("2025-06-18"), prompt_ref("code_review"), "language", "ja")
    assert response == {"jsonrpc": "2.0", "id": 6, "result": {
        "completion": {"values": ["java", "javascript"], "hasMore": False, "total": 2}}}


def test_an_argument_without_a_completer_gets_no_values(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert complete(rpc, prompt_ref("code_review"), "code", "def")["result"]["completion"] == {
        "values": [], "hasMore": False, "total": 0}
    assert complete(rpc, prompt_ref("no_completer"), "n")["result"]["completion"]["values"] == []


def test_template_variables_complete(make_rpc):
    result = complete(make_rpc("2025-06-18"), template_ref("test://template/{id}/data"), "id", "1")["result"]
    assert result == {"completion": {"values": ["123"], "hasMore": False, "total": 1}}


def test_a_completer_sees_the_arguments_already_chosen(make_rpc):
    rpc = make_rpc("2025-06-18")
    ref = template_ref("test://cities/{country}/{city}")
    chosen = complete(rpc, ref, "city", "Par", {"arguments": {"country": "fr"}})["result"]["completion"]
    alone = complete(rpc, ref, "city", "Par")["result"]["completion"]
    assert chosen["values"] == ["city:Par:fr"]
    assert alone["values"] == ["city:Par:-"]


def test_a_fixed_resource_has_nothing_to_complete(make_rpc):
    result = complete(make_rpc("2025-06-18"), template_ref("test://static-text"), "anything")["result"]
    assert result == {"completion": {"values": [], "hasMore": False, "total": 0}}


def test_at_most_100_values_come_back_with_has_more(make_rpc):
    completion = complete(make_rpc("2025-06-18"), prompt_ref("endless"), "n", "7")["result"]["completion"]
    assert completion["values"] == [f"7{n}" for n in range(100)]
    assert completion["hasMore"] is True
    # The total is unknown when there are more.
    assert "total" not in completion


def test_exactly_100_values_have_no_more(make_rpc):
    completion = complete(make_rpc("2025-06-18"), prompt_ref("exactly_hundred"), "n")["result"]["completion"]
    assert completion == {"values": [str(i) for i in range(100)], "hasMore": False, "total": 100}


# errors
@pytest.mark.parametrize(
    ("ref", "argument"),
    [
        (prompt_ref("no_such_prompt"), "x"),
        (prompt_ref("code_review"), "colour"),
        (template_ref("test://nothing/{id}"), "id"),
        (template_ref("test://template/{id}/data"), "name"),
        ({"type": "ref/tool", "name": "add"}, "a"),
        ({"type": "ref/prompt"}, "x"),
        ({}, "x"),
        ("code_review", "language"),
        (None, "language"),
        (prompt_ref(["code_review"]), "language"),
        (template_ref({"uri": "test://template/{id}/data"}), "id"),
    ],
    ids=["unknown-prompt", "unknown-argument", "unknown-template", "unknown-variable", "unknown-ref-type",
         "prompt-without-name", "empty-ref", "ref-not-object", "null-ref", "prompt-name-not-string",
         "template-uri-not-string"],
)
def test_an_unknown_or_malformed_reference_is_invalid_params(make_rpc, ref, argument):
    response = complete(make_rpc("2025-06-18"), ref, argument)
    assert response["error"]["code"] == -32602
    assert response["id"] == 6


@pytest.mark.parametrize(
    "argument",
    [None, "language", {}, {"value": "p"}, {"name": 3, "value": "p"}, {"name": "language", "value": 3}],
)
def test_a_malformed_argument_is_invalid_params(make_rpc, argument):
    response = make_rpc("2025-06-18").request(
        "completion/complete", {"ref": prompt_ref("code_review"), "argument": argument})
    assert response["error"]["code"] == -32602


def test_a_missing_ref_or_argument_is_invalid_params(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert rpc.request("completion/complete", {"argument": {"name": "x", "value": ""}})["error"]["code"] == -32602
    assert rpc.request("completion/complete", {"ref": prompt_ref("code_review")})["error"]["code"] == -32602


def test_a_missing_value_completes_as_empty(make_rpc):
    response = make_rpc("2025-06-18").request(
        "completion/complete", {"ref": prompt_ref("code_review"), "argument": {"name": "language"}})
    assert len(response["result"]["completion"]["values"]) == 10

"""The capabilities initialize advertises: exactly what is implemented, per protocol version."""

from __future__ import annotations

import pytest

BASE = {
    "tools": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "prompts": {"listChanged": True},
    "logging": {},
}


def test_2024_11_05_gets_no_completions_capability(rpc):
    assert rpc.initialize("2024-11-05")["capabilities"] == BASE


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_later_versions_also_get_completions(rpc, version):
    assert rpc.initialize(version)["capabilities"] == {**BASE, "completions": {}}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("resources/list", {}),
        ("resources/templates/list", {}),
        ("resources/subscribe", {"uri": "config://server"}),
        ("resources/unsubscribe", {"uri": "config://server"}),
        ("prompts/list", {}),
        ("logging/setLevel", {"level": "info"}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "code_review"},
                                 "argument": {"name": "language", "value": ""}}),
    ],
)
def test_every_advertised_method_is_implemented(make_rpc, method, params):
    assert "result" in make_rpc("2025-11-25").request(method, params)


@pytest.mark.parametrize("method", ["tasks/list", "tasks/get", "elicitation/create",
                                    "sampling/createMessage", "roots/list"])
def test_methods_that_are_not_advertised_are_not_found(make_rpc, method):
    assert make_rpc("2025-11-25").request(method, {})["error"]["code"] == -32601

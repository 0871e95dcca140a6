"""auth.permissions: glob grants, scopes as grants, and the Authorizer behind Dispatcher.permits."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.auth.permissions import Authorizer, Grants, grants_from_scopes, matches


@pytest.mark.parametrize(
    ("name", "patterns", "expected"),
    [
        ("add", ["add"], True),
        ("add", ["ad"], False),
        ("get_time", ["get_*"], True),
        ("Get_time", ["get_*"], False),  # case-sensitive, like tool names
        ("file:///docs/a/b.md", ["file:///docs/*"], True),  # * crosses slashes
        ("file:///etc/passwd", ["file:///docs/*"], False),
        ("x", [], False),
        ("x", ["?"], True),
    ],
)
def test_glob_matching(name, patterns, expected):
    assert matches(name, patterns) is expected


def test_grants_read_the_field_of_each_kind():
    grants = Grants(tools=("add",), resources=("mem://*",), prompts=("greet",))
    assert grants.allows("tool", "add")
    assert grants.allows("resource", "mem://a")
    assert grants.allows("resource template", "mem://{id}")
    assert grants.allows("prompt", "greet")
    assert not grants.allows("prompt", "add")
    assert not grants.allows("tool", "greet")
    assert not grants.allows("unknown kind", "add")
    assert not grants.allows("tool", None)  # a malformed name is never allowed


def test_scopes_map_to_grants_and_other_scopes_grant_nothing():
    grants = grants_from_scopes(["mcp", "openid", "tools:add", "tools:get_*", "resources:file:///*", "prompts:", "x"])
    assert grants == Grants(tools=("add", "get_*"), resources=("file:///*",), prompts=())


def test_the_authorizer_refuses_unknown_and_absent_principals():
    authorizer = Authorizer({"alice": Grants(tools=("*",))})
    assert authorizer.permits("alice", "tool", "add")
    assert not authorizer.permits("mallory", "tool", "add")
    assert not authorizer.permits(None, "tool", "add")


def test_an_oauth_principal_has_the_grants_of_its_latest_token():
    authorizer = Authorizer()
    authorizer.remember("oauth:alice", Grants(tools=("*",)))
    assert authorizer.permits("oauth:alice", "tool", "add")
    authorizer.remember("oauth:alice", Grants(tools=("echo",)))
    assert not authorizer.permits("oauth:alice", "tool", "add")
    assert authorizer.permits("oauth:alice", "tool", "echo")


def test_a_token_cannot_change_an_api_key_principal_s_fixed_grants():
    authorizer = Authorizer({"alice": Grants(tools=("echo",))})
    authorizer.remember("alice", Grants(tools=("*",)))
    assert not authorizer.permits("alice", "tool", "add")


def test_remembered_principals_are_bounded(monkeypatch):
    monkeypatch.setattr("flask_mcp_gevent.auth.permissions.REMEMBERED_PRINCIPALS", 3)
    authorizer = Authorizer()
    for n in range(5):
        authorizer.remember(f"oauth:{n}", Grants(tools=("*",)))
    assert len(authorizer.latest) == 3
    assert not authorizer.permits("oauth:0", "tool", "add")
    assert authorizer.permits("oauth:4", "tool", "add")

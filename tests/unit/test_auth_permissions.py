"""auth.permissions: glob grants and scopes as grants."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.auth.permissions import Grants, grants_from_scopes, matches


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

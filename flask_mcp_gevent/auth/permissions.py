"""Permissions: which tools, resources and prompts a principal may use, as glob patterns.

Patterns follow `fnmatch` (case-sensitive): `*` matches any run of characters
(slashes included, so `file:///docs/*` covers a whole tree), `?` one character,
`[abc]` a set. Nothing matches an empty pattern list: permissions are opt-in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

__all__ = ["KINDS", "Grants", "grants_from_scopes", "matches"]

# The kinds a request's permission is asked about, and the field of Grants each one reads.
KINDS = {"tool": "tools", "resource": "resources", "resource template": "resources", "prompt": "prompts"}
# OAuth scopes of the form `<prefix><pattern>` grant that pattern, e.g. `tools:add` or `resources:file:///*`.
SCOPE_PREFIXES = {"tools:": "tools", "resources:": "resources", "prompts:": "prompts"}


def matches(name: str, patterns: Iterable[str]) -> bool:
    """True when name matches any of the glob patterns."""
    return any(fnmatchcase(name, pattern) for pattern in patterns)


@dataclass(frozen=True)
class Grants:
    """The glob patterns of the tools, resources and prompts one principal may use."""

    tools: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()

    def allows(self, kind: str, name: str) -> bool:
        """Whether these grants cover the named tool, resource (URI or template) or prompt."""
        field = KINDS.get(kind)
        return field is not None and isinstance(name, str) and matches(name, getattr(self, field))


def grants_from_scopes(scopes: Iterable[str]) -> Grants:
    """Map OAuth scopes like `tools:add`, `tools:*`, `prompts:greet` to Grants; other scopes grant nothing."""
    found: dict[str, list[str]] = {"tools": [], "resources": [], "prompts": []}
    for scope in scopes:
        for prefix, field in SCOPE_PREFIXES.items():
            if scope.startswith(prefix) and len(scope) > len(prefix):
                found[field].append(scope[len(prefix):])
    return Grants(tools=tuple(found["tools"]), resources=tuple(found["resources"]), prompts=tuple(found["prompts"]))

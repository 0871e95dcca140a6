"""Permissions: which tools, resources and prompts a principal may use, as glob patterns.

Patterns follow `fnmatch` (case-sensitive): `*` matches any run of characters
(slashes included, so `file:///docs/*` covers a whole tree), `?` one character,
`[abc]` a set. Nothing matches an empty pattern list: permissions are opt-in.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

__all__ = ["KINDS", "Authorizer", "Grants", "grants_from_scopes", "matches"]

# The kinds Dispatcher.permits is asked about, and the field of Grants each one reads.
KINDS = {"tool": "tools", "resource": "resources", "resource template": "resources", "prompt": "prompts"}
# OAuth scopes of the form `<prefix><pattern>` grant that pattern, e.g. `tools:add` or `resources:file:///*`.
SCOPE_PREFIXES = {"tools:": "tools", "resources:": "resources", "prompts:": "prompts"}
# OAuth principals whose latest grants this worker remembers; the oldest are forgotten first.
REMEMBERED_PRINCIPALS = 10000


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

    def union(self, other: Grants) -> Grants:
        """Grants that allow what either allows."""
        return Grants(
            tools=tuple(dict.fromkeys(self.tools + other.tools)),
            resources=tuple(dict.fromkeys(self.resources + other.resources)),
            prompts=tuple(dict.fromkeys(self.prompts + other.prompts)),
        )


def grants_from_scopes(scopes: Iterable[str]) -> Grants:
    """Map OAuth scopes like `tools:add`, `tools:*`, `prompts:greet` to Grants; other scopes grant nothing."""
    found: dict[str, list[str]] = {"tools": [], "resources": [], "prompts": []}
    for scope in scopes:
        for prefix, field in SCOPE_PREFIXES.items():
            if scope.startswith(prefix) and len(scope) > len(prefix):
                found[field].append(scope[len(prefix):])
    return Grants(tools=tuple(found["tools"]), resources=tuple(found["resources"]), prompts=tuple(found["prompts"]))


class Authorizer:
    """Answers Dispatcher.permits: fixed grants per API-key principal, the latest token's grants per OAuth one.

    A session stores only its principal's name, so an OAuth principal's grants are
    recorded when its request is authenticated, just before that request is
    dispatched in the same worker. Unknown principals are refused.
    """

    def __init__(self, fixed: Mapping[str, Grants] | None = None) -> None:
        self.fixed = dict(fixed or {})
        self.latest: OrderedDict[str, Grants] = OrderedDict()

    def remember(self, principal: str, grants: Grants) -> None:
        """Record the grants of a principal's current credential (OAuth tokens change scopes)."""
        if principal in self.fixed:
            return
        self.latest[principal] = grants
        self.latest.move_to_end(principal)
        while len(self.latest) > REMEMBERED_PRINCIPALS:
            self.latest.popitem(last=False)

    def grants_of(self, principal: str | None) -> Grants | None:
        """The grants in force for a principal, or None if it is unknown here."""
        if principal is None:
            return None
        return self.fixed.get(principal) or self.latest.get(principal)

    def permits(self, principal: str | None, kind: str, name: str) -> bool:
        """Whether the principal may use the named tool, resource or prompt."""
        grants = self.grants_of(principal)
        return grants is not None and grants.allows(kind, name)

"""Hints with no JSON Schema inside a TypedDict or dataclass: a type that contains itself, a field hint that names
nothing. A parameter's is refused naming the function and the parameter; a return hint's only costs the outputSchema
(flask_mcp_gevent/toolkit/hints.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

import pytest

from flask_mcp_gevent import tool
from flask_mcp_gevent.toolkit.checks import RegistryError
from flask_mcp_gevent.toolkit.specs import spec_of


@dataclass
class Node:
    """A tree of nodes: a dataclass that contains itself."""

    name: str
    children: list[Node] = field(default_factory=list)


class Tree(TypedDict):
    """A tree as a TypedDict that contains itself."""

    name: str
    kids: list[Tree]


@dataclass
class Dangling:
    """A dataclass whose field hint names nothing importable."""

    x: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821


@dataclass
class Pair:
    """Two nodes side by side: a class used twice is not one that contains itself."""

    left: Leaf
    right: Leaf


@dataclass
class Leaf:
    """A plain dataclass."""

    value: int


@pytest.mark.parametrize("hint", [Node, Tree, Dangling, list[Node], Node | None])
def test_a_return_hint_that_cannot_be_described_only_costs_the_output_schema(hint):
    def report() -> None:
        """Report."""

    report.__annotations__["return"] = hint
    tool(report)
    assert spec_of(report).output_schema is None


@pytest.mark.parametrize(("hint", "problem"), [(Node, "Node (it contains itself"), (Tree, "Tree (it contains itself"),
                                               (Dangling, "cannot read its field hints")])
def test_a_parameter_that_cannot_be_described_is_refused_naming_the_function_and_parameter(hint, problem):
    def plant(x: int) -> str:
        """Plant."""
        return ""

    plant.__annotations__["x"] = hint
    with pytest.raises(RegistryError, match="plant.*parameter 'x' has a type with no JSON Schema") as refused:
        tool(plant)
    assert problem in str(refused.value)


def test_a_class_used_twice_side_by_side_is_described_twice():
    @tool
    def pair(p: Pair) -> Pair:
        """Pair."""
        return p

    properties = spec_of(pair).input_schema["properties"]["p"]["properties"]
    assert properties["left"] == properties["right"]
    assert properties["left"]["properties"] == {"value": {"type": "integer"}}

"""Run-time registry changes on a fleet: made by reference on every worker before anyone is told.

The first part drives Registry with a stand-in replicator (another registry playing
the other worker); the second runs RedisStore "workers" on a real redis-server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.store.redis import RedisStore
from mcp_tools import Registry, RegistryError, tool
from tests.redis_server import redis_server  # noqa: F401  (fixture)

NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}


@tool(input_schema=NO_ARGUMENTS)
def module_level_tool() -> str:
    """A tool any worker can import by name."""
    return "module level"


def made_tool(name: str, greeting: str = "hello"):
    """A factory: a fresh tool under name that answers greeting."""

    @tool(name=name, input_schema=NO_ARGUMENTS)
    def greet() -> str:
        """Answer with the greeting."""
        return f"{greeting} from {name}"

    return greet


class Fleet:
    """A stand-in replicator: hands each change to the other workers' registries, versions in order."""

    def __init__(self, *others: Registry) -> None:
        self.others = others
        self.version = 0
        self.changes: list[dict[str, Any]] = []
        self.events: list[str] = []

    def __call__(self, change: dict[str, Any]) -> int:
        self.version += 1
        self.changes.append(change)
        for other in self.others:
            other.apply(change, self.version)
        self.events.append("replicated")
        return self.version


@pytest.fixture
def pair() -> tuple[Registry, Registry, Fleet]:
    """A registry whose changes reach a second one, and the fleet between them."""
    here, there = Registry(), Registry()
    fleet = Fleet(there)
    here.replicator = fleet
    here.on_change(lambda kind: fleet.events.append(f"notified {kind}"))
    return here, there, fleet


def test_a_factory_change_is_made_on_the_other_worker_before_listeners_hear_of_it(pair):
    here, there, fleet = pair
    here.add_from(made_tool, name="rt-one", greeting="hi")
    assert there.tools["rt-one"].fn() == "hi from rt-one"
    assert here.tools["rt-one"].fn() == "hi from rt-one"
    assert fleet.events == ["replicated", "notified tool"]
    assert fleet.changes == [{"action": "add", "kind": "tool", "key": "rt-one",
                              "factory": f"{__name__}:made_tool", "arguments": {"name": "rt-one", "greeting": "hi"}}]


def test_a_module_level_function_is_replicated_by_its_name(pair):
    here, there, fleet = pair
    here.add_function(module_level_tool)
    assert there.tools["module_level_tool"].fn is module_level_tool
    assert fleet.changes[0]["function"] == f"{__name__}:module_level_tool"


def test_removing_reaches_the_other_worker_in_one_call(pair):
    here, there, fleet = pair
    here.add_from(made_tool, name="rt-gone")
    assert here.remove("tool", "rt-gone") is True
    assert "rt-gone" not in here.tools and "rt-gone" not in there.tools
    assert here.remove("tool", "rt-gone") is False
    assert len(fleet.changes) == 2  # nothing to tell about a removal that removed nothing


def test_a_closure_is_refused_on_a_fleet_and_changes_nothing(pair):
    here, there, fleet = pair
    with pytest.raises(RegistryError, match="cannot reach the other workers"):
        here.add_function(made_tool("rt-closure"))
    assert "rt-closure" not in here.tools and fleet.changes == [] and fleet.events == []


@pytest.mark.parametrize("arguments", [{"name": "rt-bad", "greeting": b"bytes"}, {"name": "rt-bad", "greeting": (1,)}])
def test_factory_arguments_must_be_plain_json(pair, arguments):
    here, _, fleet = pair
    with pytest.raises(RegistryError, match="JSON"):
        here.add_from(made_tool, **arguments)
    assert fleet.changes == []


def test_a_factory_that_is_not_importable_is_refused(pair):
    here, _, fleet = pair
    with pytest.raises(RegistryError, match="cannot reach the other workers"):
        here.add_from(lambda: made_tool("rt-lambda"))
    assert fleet.changes == []


def test_duplicates_are_refused_before_anything_is_replicated(pair):
    here, _, fleet = pair
    here.add_from(made_tool, name="rt-twice")
    with pytest.raises(RegistryError, match="duplicate"):
        here.add_from(made_tool, name="rt-twice")
    assert len(fleet.changes) == 1


def test_a_failed_replication_leaves_the_registry_as_it_was():
    registry = Registry()
    heard: list[str] = []
    registry.on_change(heard.append)

    def unreachable(change: dict[str, Any]) -> int:
        raise RuntimeError("store unreachable")

    registry.replicator = unreachable
    with pytest.raises(RuntimeError):
        registry.add_from(made_tool, name="rt-lost")
    assert "rt-lost" not in registry.tools and heard == []


def test_a_late_change_never_undoes_a_later_one():
    registry = Registry()
    add = {"action": "add", "kind": "tool", "key": "rt-late", "factory": f"{__name__}:made_tool",
           "arguments": {"name": "rt-late"}}
    registry.apply({"action": "remove", "kind": "tool", "key": "rt-late"}, 7)
    registry.apply(add, 6)  # heard after the removal that followed it
    assert "rt-late" not in registry.tools
    registry.apply(add, 8)
    registry.apply(add, 8)  # heard twice (a reload after a reconnect)
    assert list(registry.tools) == ["rt-late"]


def test_without_a_fleet_closures_still_register():
    registry = Registry()
    registry.add_function(made_tool("rt-local"))
    assert registry.tools["rt-local"].fn() == "hello from rt-local"


# RedisStore workers on a real Redis
@pytest.fixture
def workers(redis_server) -> Iterator[Any]:  # noqa: F811
    """Start RedisStore 'workers' sharing one redis-server, each with its own registry, ready to serve."""
    redis_server.client().flushdb()
    made: list[RedisStore] = []

    def start() -> tuple[RedisStore, Registry]:
        store = RedisStore(Settings.from_mapping({"MCP_REDIS_URL": redis_server.url}))
        registry = Registry()
        store.fleet.share_registry(registry)
        store.fleet.prepare()
        made.append(store)
        return store, registry

    yield start
    for store in made:
        store.stop()


@pytest.mark.redis
def test_a_change_on_one_redis_worker_is_on_every_other_when_the_call_returns(workers):
    (_, first), (_, second), (_, third) = workers(), workers(), workers()
    first.add_from(made_tool, name="rt-fleet")
    assert second.tools["rt-fleet"].fn() == "hello from rt-fleet"
    assert third.tools["rt-fleet"].fn() == "hello from rt-fleet"
    assert second.remove("tool", "rt-fleet") is True
    assert all("rt-fleet" not in registry.tools for registry in (first, second, third))


@pytest.mark.redis
def test_a_redis_worker_that_starts_later_gets_the_current_state(workers):
    _, first = workers()
    first.add_from(made_tool, name="rt-kept")
    first.add_from(made_tool, name="rt-dropped")
    first.add_function(module_level_tool)
    first.remove("tool", "rt-dropped")
    _, late = workers()
    assert list(late.tools) == ["rt-kept", "module_level_tool"]


@pytest.mark.redis
def test_a_closure_is_refused_on_a_redis_fleet(workers):
    _, first = workers()
    _, second = workers()
    with pytest.raises(RegistryError, match="cannot reach the other workers"):
        first.add_function(made_tool("rt-closure"))
    assert "rt-closure" not in first.tools and "rt-closure" not in second.tools


@pytest.mark.redis
def test_changes_after_redis_lost_its_data_still_reach_every_worker(workers, redis_server):  # noqa: F811
    _, first = workers()
    _, second = workers()
    first.add_from(made_tool, name="rt-before-loss")
    redis_server.client().flushdb()  # a Redis without persistence, restarted
    first.add_from(made_tool, name="rt-after-loss")
    first.remove("tool", "rt-before-loss")
    assert list(second.tools) == ["rt-after-loss"]

"""The registry behind the decorators: the tools, resources and prompts one server exposes.

Decorators only mark a function with its spec; `Registry.discover()` collects the
marked functions of a set of modules into one registry per app, so two apps in one
process never share state and importing a module twice never registers twice.
On a fleet, a change made while the server runs is named by reference (an importable
function, or a factory and JSON arguments), so that every worker can make it too.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import threading
from collections.abc import Callable, Iterable
from typing import Any

from flask_mcp_gevent.toolkit.checks import RegistryError, where
from flask_mcp_gevent.toolkit.specs import MARK, Prompt, Resource, ResourceTemplate, Tool, spec_of

__all__ = ["Registry"]

# The package of tool files discover() reads: the server names it only here, and imports it only by this name.
TOOLS_PACKAGE = "mcp_tools"


def resolve_reference(reference: str) -> Any:
    """Import what a "module:qualname" reference names."""
    module_name, _, qualname = reference.partition(":")
    value: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


def reference_to(value: Any) -> str | None:
    """Name a module-level function as "module:qualname", or None when importing that name would not find it."""
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
    if not module or not qualname or "<" in qualname:  # <locals>, <lambda>: nothing another process can import
        return None
    reference = f"{module}:{qualname}"
    try:
        found = resolve_reference(reference)
    except (ImportError, AttributeError):
        return None
    return reference if found is value else None


def not_replicable(what: str) -> RegistryError:
    """The error for a run-time change that other workers could not make, saying what to do instead."""
    return RegistryError(
        f"{what} cannot reach the other workers: they make run-time changes by importing what they name. "
        "Register a module-level function (registry.add_function(fn)), or build it with a module-level factory "
        "(registry.add_from(factory, **arguments), arguments as JSON values)"
    )


def duplicate(kind: str, key: str, first: Any, second: Any) -> RegistryError:
    """The error for a second declaration of a name (or URI), naming where both are defined."""
    what = "name" if kind in ("tool", "prompt") else "URI"
    return RegistryError(f"duplicate {kind} {key!r}: declared at {where(first.fn)}; again at {where(second.fn)}; "
                         f"give one of them another {what}")


def json_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Return arguments if JSON carries them unchanged to other workers, else raise RegistryError."""
    try:
        same = json.loads(json.dumps(arguments)) == arguments
    except (TypeError, ValueError):
        same = False
    if not same:
        raise not_replicable("a factory's arguments that are not plain JSON values")
    return arguments


class Registry:
    """The tools, resources and prompts one server exposes, in registration order."""

    def __init__(self) -> None:
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        self._listeners: list[Callable[[str], None]] = []
        self._lock = threading.Lock()
        # Set on a fleet: takes a change made here to every worker (before listeners hear of it), returns its version.
        self.replicator: Callable[[dict[str, Any]], int] | None = None
        # The version of the last replicated change to each (kind, key), so a late or repeated one is ignored.
        self._versions: dict[tuple[str, str], int] = {}

    def add(self, spec: Tool | Resource | ResourceTemplate | Prompt) -> None:
        """Register one spec, rejecting duplicates, and tell listeners its list changed."""
        self._add(spec, None)

    def declare(self, spec: Tool | Resource | ResourceTemplate | Prompt) -> None:
        """Register a spec declared in code every worker runs (an extension's decorators), rejecting duplicates.

        Not a run-time change: each worker makes the same declaration as it imports the same module, so nothing
        is sent to the fleet, and no session exists yet to be told.
        """
        table, key, kind = self._table_for(spec)
        with self._lock:
            if key in table:
                raise duplicate(kind, key, table[key], spec)
            table[key] = spec

    def remove(self, kind: str, key: str) -> bool:
        """Remove a registered tool, resource, resource template or prompt; tell listeners."""
        table = self._table_named(kind)
        if self.replicator is None:
            with self._lock:
                removed = table.pop(key, None) is not None
        else:
            removed = key in table
            if removed:
                version = self.replicator({"action": "remove", "kind": kind, "key": key})
                self._place(kind, key, None, version)
        if removed:
            self._notify(kind)
        return removed

    def add_function(self, fn: Callable[..., Any]) -> None:
        """Register a function that one of the decorators has marked."""
        self.add(spec_of(fn))

    def add_from(self, factory: Callable[..., Callable[..., Any]], **arguments: Any) -> None:
        """Register the marked function factory(**arguments) returns; on a fleet every worker calls it alike."""
        recipe = None
        if self.replicator is not None:
            reference = reference_to(factory)
            if reference is None:
                raise not_replicable(f"factory {getattr(factory, '__qualname__', factory)!r}")
            recipe = {"factory": reference, "arguments": json_arguments(arguments)}
        self._add(spec_of(factory(**arguments)), recipe)

    def apply(self, change: dict[str, Any], version: int) -> None:
        """Make a change that another worker made; listeners are not told (that worker tells every session)."""
        spec = None
        if change["action"] == "add":
            if "factory" in change:
                fn = resolve_reference(change["factory"])(**change["arguments"])
            else:
                fn = resolve_reference(change["function"])
            spec = spec_of(fn)
            _, key, kind = self._table_for(spec)
            if (kind, key) != (change["kind"], change["key"]):
                raise RegistryError(f"{change['kind']} {change['key']!r} was rebuilt here as {kind} {key!r}")
        self._place(change["kind"], change["key"], spec, version)

    def _add(self, spec: Any, recipe: dict[str, Any] | None) -> None:
        """Register spec here, and first on every worker when there is a fleet; tell listeners."""
        table, key, kind = self._table_for(spec)
        if self.replicator is None:
            with self._lock:
                if key in table:
                    raise duplicate(kind, key, table[key], spec)
                table[key] = spec
        else:
            if key in table:
                raise duplicate(kind, key, table[key], spec)
            if recipe is None:
                reference = reference_to(spec.fn)
                if reference is None or getattr(resolve_reference(reference), MARK, None) is not spec:
                    raise not_replicable(f"{kind} {key!r} (its function {getattr(spec.fn, '__qualname__', spec.fn)!r} "
                                         "is a closure or lambda, or not importable by that name)")
                recipe = {"function": reference}
            version = self.replicator({"action": "add", "kind": kind, "key": key, **recipe})
            self._place(kind, key, spec, version)
        self._notify(kind)

    def _place(self, kind: str, key: str, spec: Any, version: int) -> None:
        """Set (spec) or clear (None) one entry, unless a later change to it was already made here."""
        with self._lock:
            if version <= self._versions.get((kind, key), 0):
                return
            self._versions[(kind, key)] = version
            table = self._table_named(kind)
            if spec is None:
                table.pop(key, None)
            else:
                table[key] = spec

    def add_module(self, module: Any) -> int:
        """Register every marked function defined in module; return how many."""
        count = 0
        for value in vars(module).values():
            spec = getattr(value, MARK, None)
            if spec is not None and getattr(value, "__module__", None) == module.__name__:
                self.add(spec)
                count += 1
        return count

    def on_change(self, listener: Callable[[str], None]) -> None:
        """Call listener(kind) whenever a tool, resource or prompt is added or removed."""
        self._listeners.append(listener)

    @classmethod
    def discover(cls, package: str = TOOLS_PACKAGE, plugins: Iterable[str] = ()) -> Registry:
        """Build a registry from every public module of package plus the plugin modules."""
        registry = cls()
        pkg = importlib.import_module(package)
        names = sorted(
            f"{package}.{info.name}"
            for info in pkgutil.iter_modules(pkg.__path__)
            if not info.name.startswith("_")
        )
        for module_name in [*names, *plugins]:
            registry.add_module(importlib.import_module(module_name))
        return registry

    def _table_named(self, kind: str) -> dict[str, Any]:
        """The table of one kind: "tool", "resource", "resource template" or "prompt"."""
        tables: dict[str, dict[str, Any]] = {
            "tool": self.tools,
            "resource": self.resources,
            "resource template": self.templates,
            "prompt": self.prompts,
        }
        if kind not in tables:
            raise RegistryError(f"Unknown kind {kind!r}; use one of {', '.join(repr(name) for name in tables)}")
        return tables[kind]

    def _table_for(self, spec: Any) -> tuple[dict[str, Any], str, str]:
        """Return the table, key and kind name that spec belongs to."""
        if isinstance(spec, Tool):
            return self.tools, spec.name, "tool"
        if isinstance(spec, Resource):
            return self.resources, spec.uri, "resource"
        if isinstance(spec, ResourceTemplate):
            return self.templates, spec.uri_template, "resource template"
        if isinstance(spec, Prompt):
            return self.prompts, spec.name, "prompt"
        raise RegistryError(f"cannot register {spec!r}")

    def _notify(self, kind: str) -> None:
        """Tell every listener that the list of `kind` changed."""
        for listener in list(self._listeners):
            listener(kind)

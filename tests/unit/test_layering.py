"""The import graph keeps the picture true: layers run one way and nothing circles; transports never import the
store, stdio never enters it, and one module chooses a message's era.

Imports are read with `ast` (at module level and inside functions; `if TYPE_CHECKING:` blocks are
types only and are skipped), so a lazy import inside a function counts like any other.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Top to bottom: a module may import its own layer and any layer below it, never one above.
# A package name covers every module inside it.
LAYERS = (
    # layer        modules
    ("extension", ("flask_mcp_gevent.extension",)),
    ("serving", ("flask_mcp_gevent.serving",)),
    ("web", ("flask_mcp_gevent.web",)),
    # The 2026-07-28 wire is one package across three layers: its HTTP transport, its methods beside the protocol, and
    # what a request says about itself (metadata, validation, results, the requestState codec) with the leaves.
    ("transports", ("flask_mcp_gevent.transports", "flask_mcp_gevent.stateless.http")),
    ("server", ("flask_mcp_gevent.server", "flask_mcp_gevent.notifications", "flask_mcp_gevent.eras")),
    # The tasks extension is one package across two layers: what runs and answers tasks beside the protocol,
    # what keeps them (the task record and the task stores) beside the store.
    ("protocol", ("flask_mcp_gevent.protocol", "flask_mcp_gevent.tasks", "flask_mcp_gevent.stateless.methods",
                  "flask_mcp_gevent.stateless.listen", "flask_mcp_gevent.stateless.listen_filter",
                  "flask_mcp_gevent.stateless.input_rounds")),
    ("leaves", ("flask_mcp_gevent.store", "flask_mcp_gevent.auth", "flask_mcp_gevent.config",
                "flask_mcp_gevent.session", "flask_mcp_gevent.encoding", "flask_mcp_gevent.errors",
                "flask_mcp_gevent.messages", "flask_mcp_gevent.limits", "flask_mcp_gevent.logs",
                "flask_mcp_gevent.metrics", "flask_mcp_gevent.stateless", "flask_mcp_gevent.toolkit",
                "flask_mcp_gevent.tasks.record", "flask_mcp_gevent.tasks.store", "flask_mcp_gevent.tasks.redis_store",
                "flask_mcp_gevent.mailbox", "flask_mcp_gevent.worker_calls", "flask_mcp_gevent.without_gevent",
                "flask_mcp_gevent.conditions", "flask_mcp_gevent.subscription", "flask_mcp_gevent.event_ids",
                "flask_mcp_gevent.stream_handoff")),
)
# What a transport may take from Flask: the response class, which needs no request or app context.
# Flask's request-bound objects (request, g, current_app, session) and the app itself stay in the web layer.
TRANSPORT_FLASK_NAMES = {"Response"}
DYNAMIC_IMPORTS = {"import_module", "__import__"}


def module_name(path: Path) -> str:
    """The dotted name of a source file under ROOT."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources(package: str) -> dict[str, Path]:
    """Every module of a package, by dotted name."""
    return {module_name(path): path for path in sorted((ROOT / package).rglob("*.py"))}


MODULES = {**sources("flask_mcp_gevent"), **sources("mcp_tools")}


def is_type_checking(node: ast.If) -> bool:
    """Whether an `if` is `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`)."""
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def walk_outside_type_checking(node: ast.AST):
    """Yield every node under node, skipping the bodies of `if TYPE_CHECKING:` blocks."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and is_type_checking(child):
            for other in child.orelse:
                yield other
                yield from walk_outside_type_checking(other)
            continue
        yield child
        yield from walk_outside_type_checking(child)


def imports_of(name: str) -> list[tuple[int, str, str | None]]:
    """The (line, module, imported name or None) of every import a module runs."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in walk_outside_type_checking(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found += [(node.lineno, base, alias.name) for alias in node.names]
    return found


def imported_modules(name: str) -> list[tuple[int, str]]:
    """The (line, module) of every import, `from package import submodule` naming the submodule."""
    result = []
    for line, module, member in imports_of(name):
        submodule = f"{module}.{member}"
        result.append((line, submodule if member is not None and submodule in MODULES else module))
    return result


def layer_of(module: str) -> int | None:
    """The index in LAYERS of a module's layer (0 is the top), by its longest matching prefix; None for what is not
    in flask_mcp_gevent's layers."""
    found = [(len(prefix), index) for index, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
             if module == prefix or module.startswith(prefix + ".")]
    return max(found)[1] if found else None


def where(name: str, line: int) -> str:
    """A file:line for a message."""
    return f"{MODULES[name].relative_to(ROOT)}:{line}"


def in_package(name: str, package: str) -> bool:
    """Whether a dotted module name is package or inside it."""
    return name == package or name.startswith(package + ".")


def test_every_module_of_the_server_has_a_layer():
    unplaced = [name for name in MODULES if in_package(name, "flask_mcp_gevent") and name != "flask_mcp_gevent"
                and layer_of(name) is None]
    assert unplaced == [], "add these modules to LAYERS"


def test_protocol_and_transports_never_import_flask_request_objects_or_the_web_layer():
    wrong = []
    for name in MODULES:
        if not (in_package(name, "flask_mcp_gevent.protocol") or in_package(name, "flask_mcp_gevent.transports")):
            continue
        transport = in_package(name, "flask_mcp_gevent.transports")
        for line, module, member in imports_of(name):
            top = module.split(".")[0]
            allowed_flask = transport and module == "flask" and member in TRANSPORT_FLASK_NAMES
            if in_package(module, "flask_mcp_gevent.web") or (top == "flask" and not allowed_flask):
                wrong.append(f"{where(name, line)} imports {module}{'.' + member if member else ''}")
            elif top == "werkzeug" and not transport:
                wrong.append(f"{where(name, line)} imports {module} (the protocol knows nothing of HTTP)")
    assert wrong == []


@pytest.mark.parametrize("above", ["flask_mcp_gevent.protocol", "flask_mcp_gevent.server",
                                   "flask_mcp_gevent.transports", "flask_mcp_gevent.web"])
def test_the_store_never_imports_what_sits_above_it(above):
    wrong = [f"{where(name, line)} imports {module}"
             for name in MODULES if in_package(name, "flask_mcp_gevent.store")
             for line, module in imported_modules(name) if in_package(module, above)]
    assert wrong == []


def test_mcp_tools_takes_only_the_toolkit_from_the_server():
    wrong = [f"{where(name, line)} imports {module}"
             for name in MODULES if in_package(name, "mcp_tools")
             for line, module in imported_modules(name)
             if in_package(module, "flask_mcp_gevent") and not in_package(module, "flask_mcp_gevent.toolkit")]
    assert wrong == []


def test_the_toolkit_imports_nothing_else_of_the_server_and_no_flask():
    """A tool file imports the toolkit through mcp_tools, so the toolkit must not pull in the server or Flask."""
    wrong = [f"{where(name, line)} imports {module}"
             for name in MODULES if in_package(name, "flask_mcp_gevent.toolkit")
             for line, module in imported_modules(name)
             if (in_package(module, "flask_mcp_gevent") and not in_package(module, "flask_mcp_gevent.toolkit"))
             or module.split(".")[0] in {"flask", "werkzeug", "gevent"}]
    assert wrong == []


def test_the_server_never_imports_mcp_tools():
    """The server reaches the tool files only through the registry's discovery, by package name."""
    wrong = [f"{where(name, line)} imports {module}"
             for name in MODULES if in_package(name, "flask_mcp_gevent")
             for line, module in imported_modules(name) if in_package(module, "mcp_tools")]
    assert wrong == []


def string_constants(name: str) -> list[tuple[int, str]]:
    """The (line, text) of every string constant in a module, docstrings aside."""
    tree = ast.parse(MODULES[name].read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_toolkit_and_mcp_tools_import_by_name_only_what_they_are_given():
    """The registry's dynamic imports take their names from callers; no string in mcp_tools names the server."""
    wrong = []
    for name in MODULES:
        if not (in_package(name, "mcp_tools") or in_package(name, "flask_mcp_gevent.toolkit")):
            continue
        if in_package(name, "mcp_tools"):
            wrong += [f"{where(name, line)} names flask_mcp_gevent in {text!r}"
                      for line, text in string_constants(name) if re.search(r"\bflask_mcp_gevent\b", text)]
        for node in ast.walk(ast.parse(MODULES[name].read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) \
                    in DYNAMIC_IMPORTS and node.args and isinstance(node.args[0], ast.Constant):
                wrong.append(f"{where(name, node.lineno)} imports {node.args[0].value!r} dynamically")
    assert wrong == []


def test_the_server_names_mcp_tools_only_as_the_package_discovery_reads():
    named = [(name, text) for name in MODULES if in_package(name, "flask_mcp_gevent")
             for _, text in string_constants(name) if re.search(r"\bmcp_tools\b", text)]
    assert named == [("flask_mcp_gevent.toolkit.registry", "mcp_tools")]


def test_no_import_runs_up_the_layers():
    wrong = []
    for name in MODULES:
        own = layer_of(name)
        if own is None:
            continue
        for line, module in imported_modules(name):
            target = layer_of(module)
            if target is not None and target < own:
                wrong.append(f"{where(name, line)}: {LAYERS[own][0]} imports {LAYERS[target][0]} ({module})")
    assert wrong == []


def import_graph() -> dict[str, list[str]]:
    """Each flask_mcp_gevent module and the flask_mcp_gevent modules it imports."""
    return {name: sorted({module for _, module in imported_modules(name) if module in MODULES and module != name})
            for name in MODULES if in_package(name, "flask_mcp_gevent")}


def circles(graph: dict[str, list[str]]) -> list[list[str]]:
    """One circle through each strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, []):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_circles_are_found():
    assert circles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    assert circles({"a": ["b"], "b": []}) == []


def test_no_import_circle_inside_the_server():
    assert circles(import_graph()) == []


def test_no_transport_imports_the_store():
    # A transport moves messages: the server's narrow interface stands between it and the store. What crosses that
    # line (the conditions it reports, the subscription a stream reads, event ids) are leaves outside the store.
    transports = [name for name in MODULES if in_package(name, "flask_mcp_gevent.transports")
                  or name == "flask_mcp_gevent.stateless.http"]
    wrong = [f"{where(name, line)} imports {module}" for name in transports
             for line, module in imported_modules(name) if in_package(module, "flask_mcp_gevent.store")]
    # Nor reaches it through the server.
    wrong += [f"{where(name, node.lineno)} reaches .store" for name in transports
              for node in ast.walk(ast.parse(MODULES[name].read_text()))
              if isinstance(node, ast.Attribute) and node.attr == "store"]
    assert wrong == []


def test_stdio_never_enters_the_store():
    """stdio keeps its session and writes its lines itself: no session store, event log, subscription or mailbox of
    the store; what it hands the server runs without one."""
    source = MODULES["flask_mcp_gevent.transports.stdio"].read_text()
    for name in ("open_session", "subscribe(", ".publish(", "close_session", "find_session", ".events", ".sessions"):
        assert name not in source.replace("self.publish(", "").replace("def publish(", ""), name


def test_one_module_chooses_the_era():
    """Which era a message belongs to is decided in eras.py only: nowhere else reads the version a request names
    to pick a wire."""
    deciders = [name for name in MODULES if in_package(name, "flask_mcp_gevent")
                and name not in ("flask_mcp_gevent.eras", "flask_mcp_gevent.stateless.metadata")
                and re.search(r"names_stateless_version|body_version\(", MODULES[name].read_text())]
    assert deciders == []


# The transports that serve a wire; the other transports modules are pieces they share.
WIRE_TRANSPORTS = ("flask_mcp_gevent.transports.legacy_sse", "flask_mcp_gevent.transports.streamable_http",
                   "flask_mcp_gevent.stateless.http", "flask_mcp_gevent.transports.stdio")


def test_no_transport_imports_another():
    wrong = [f"{where(name, line)} imports {module}"
             for name in WIRE_TRANSPORTS for line, module in imported_modules(name)
             if module in WIRE_TRANSPORTS and module != name]
    assert wrong == []


def test_web_modules_find_the_server_without_importing_the_routes():
    # The extension registers the routes; the rest, the hot path included, need only the server.
    allowed = {"flask_mcp_gevent.web.flask_extension"}
    wrong = [f"{where(name, line)} imports the routes"
             for name in MODULES if in_package(name, "flask_mcp_gevent.web") and name not in allowed
             for line, module in imported_modules(name) if module == "flask_mcp_gevent.web.routes"]
    assert wrong == []


SLOT_METHODS = ("take_call_slot", "give_back_call_slot")


def test_only_the_call_slots_use_the_stores_call_slot_methods():
    # A slot's whole life in limits.CallSlots: taken, given back.
    wrong = [f"{name} calls sessions.{method}" for name in MODULES
             if in_package(name, "flask_mcp_gevent") and not in_package(name, "flask_mcp_gevent.store")
             and name != "flask_mcp_gevent.limits"
             for method in SLOT_METHODS if f".{method}(" in MODULES[name].read_text()]
    assert wrong == []


def test_the_server_does_not_ask_which_transport_it_serves():
    source = MODULES["flask_mcp_gevent.server"].read_text()
    named = [member for _, module, member in imports_of("flask_mcp_gevent.server")
             if module == "flask_mcp_gevent.session" and member in ("SSE", "STREAMABLE", "STDIO", "STATELESS")]
    assert named == [] and "session.transport" not in source

"""Count the project modules one `tools/call` of `echo` enters, per wire and store; and the longest import chain.

    python -m bench.call_path                                  # every wire on the in-memory store
    python -m bench.call_path --redis-url redis://127.0.0.1:6379/0   # ... and on a Redis store
    python -m bench.call_path --redis                          # ... on a throwaway redis-server
    python -m bench.call_path --wires legacy,stdio --json       # one JSON line instead of the table

Every wire runs in this process: the HTTP ones through the Flask app's WSGI callable (the one gunicorn's
worker calls) with gevent, stdio through its server on in-memory pipes. After the handshake and a warm-up
call, sys.setprofile records the file of every Python function entered while one more call is sent and its
answer read (on legacy SSE, read from the session's stream), the response closed; the files under
flask_mcp_gevent/ and mcp_tools/ are the modules counted. Each call is traced on its own (--repeat times):
a module in every trace counts, one in only some is shown apart (a background greenlet that happened to run).
"""

if __name__ == "__main__":
    # First lines on purpose, as in app.py: the Redis store's sockets must be cooperative before anything imports them.
    from gevent import monkey

    monkey.patch_all()

import argparse
import ast
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

import flask_mcp_gevent
from bench.call_path_wires import WIRES, open_client

__all__ = ["PROJECT_ROOT", "WIRES", "count_modules", "import_graph", "longest_import_chain", "trace_modules"]

PROJECT_ROOT = Path(flask_mcp_gevent.__file__).resolve().parents[1]
PACKAGES = ("flask_mcp_gevent", "mcp_tools")
# gunicorn imports wsgi, which imports app, which builds the app from the packages.
ENTRY_POINTS = ("wsgi", "app")


def project_module(filename: str) -> str | None:
    """`flask_mcp_gevent/x.py` for a code object's file under one of the project's packages, else None."""
    try:
        relative = Path(filename).resolve().relative_to(PROJECT_ROOT)
    except ValueError:
        return None
    return relative.as_posix() if relative.parts[0] in PACKAGES else None


def trace_modules(action: Callable[[], Any]) -> tuple[set[str], Any]:
    """Run action with a profile hook on; the project modules whose functions it entered, and its result."""
    filenames: set[str] = set()

    def on_event(frame: Any, event: str, arg: Any) -> None:
        # "call" is a Python function entered, a generator resumed included (greenlets share the thread's hook).
        if event == "call":
            filenames.add(frame.f_code.co_filename)

    sys.setprofile(on_event)
    try:
        result = action()
    finally:
        sys.setprofile(None)
    return {m for m in map(project_module, filenames) if m is not None}, result


def count_modules(wire: str, redis_url: str | None = None, repeat: int = 3) -> dict[str, Any]:
    """Trace `repeat` calls of echo on one wire, each on its own, after the handshake and a warm-up call."""
    client = open_client(wire, redis_url)
    try:
        client.call()  # the warm-up: first-use imports and caches are not the call path
        traces = []
        for _ in range(repeat):
            modules, answer = trace_modules(client.call)
            if answer.get("result", {}).get("content", [{}])[0].get("text") != client.expected_text:
                raise RuntimeError(f"{wire}: echo answered {answer!r}")
            traces.append(modules)
    finally:
        client.close()
    always = set.intersection(*traces)
    return {"wire": wire, "store": "redis" if redis_url else "memory", "count": len(always),
            "modules": sorted(always), "sometimes": sorted(set.union(*traces) - always)}


# The static side: which project module imports which.
def module_names(entry_points: bool = False) -> dict[str, Path]:
    """Every module of the project's packages (and, if asked, the entry points app.py and wsgi.py), by dotted name."""
    found = {name: PROJECT_ROOT / f"{name}.py" for name in ENTRY_POINTS} if entry_points else {}
    for package in PACKAGES:
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def is_type_checking(node: ast.AST) -> bool:
    """Whether a node is an `if TYPE_CHECKING:` block (types only: nothing is imported at run time)."""
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_in(node: ast.AST, package: str) -> list[tuple[str, str | None]]:
    """(module, imported name or None) of every import under node, inside functions too, outside TYPE_CHECKING."""
    found: list[tuple[str, str | None]] = []
    for child in ast.iter_child_nodes(node):
        if is_type_checking(child):
            continue
        if isinstance(child, ast.Import):
            found += [(alias.name, None) for alias in child.names]
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found += [(base, alias.name) for alias in child.names]
        found += imports_in(child, package)
    return found


def import_graph(entry_points: bool = False) -> dict[str, set[str]]:
    """Each project module and the project modules it imports (`from package import submodule` names the submodule)."""
    modules = module_names(entry_points)
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for module, member in imports_in(ast.parse(path.read_text(), str(path)), package):
            target = f"{module}.{member}" if f"{module}.{member}" in modules else module
            if target in modules and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def longest_import_chain(graph: dict[str, set[str]]) -> list[str]:
    """The longest chain a imports b imports c ... (the graph has no circle: tests/unit/test_layering.py)."""
    best: dict[str, list[str]] = {}

    def chain_from(name: str) -> list[str]:
        if name not in best:
            best[name] = [name]  # a circle, were there one, ends here instead of recursing forever
            best[name] = [name, *max((chain_from(t) for t in sorted(graph[name])), key=len, default=[])]
        return best[name]

    return max((chain_from(name) for name in sorted(graph)), key=len, default=[])


def print_table(rows: list[dict[str, Any]], chain: list[str], served_chain: list[str]) -> None:
    """The table: wire, store, module count, module list; then the import chain."""
    print(f"{'wire':<12} {'store':<7} {'modules':>7}  list")
    for row in rows:
        if row.get("skipped"):
            print(f"{row['wire']:<12} {row['store']:<7} {'-':>7}  {row['skipped']}")
            continue
        print(f"{row['wire']:<12} {row['store']:<7} {row['count']:>7}  {', '.join(short(m) for m in row['modules'])}")
        if row["sometimes"]:
            print(f"{'':<28}  not in every trace: {', '.join(short(m) for m in row['sometimes'])}")
    print(f"\nlongest import chain among project modules: {len(chain)} modules")
    print("  " + " -> ".join(chain))
    print(f"from gunicorn's entry point: {len(served_chain)} modules, {' -> '.join(served_chain[:3])} -> ...")


def short(module: str) -> str:
    """flask_mcp_gevent/protocol/tools.py -> protocol/tools (mcp_tools keeps its package name)."""
    return module.removeprefix("flask_mcp_gevent/").removesuffix(".py")


def main(argv: list[str] | None = None) -> int:
    """Count every requested wire on every requested store; print the table (or one JSON line)."""
    parser = argparse.ArgumentParser(prog="python -m bench.call_path", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wires", default=",".join(WIRES), help=f"comma-separated, of {', '.join(WIRES)}")
    parser.add_argument("--redis-url", help="also count on a Redis store at this URL (its keys are left to expire)")
    parser.add_argument("--redis", action="store_true", help="also count on a throwaway redis-server")
    parser.add_argument("--repeat", type=int, default=3, help="calls traced one by one per wire and store")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    args = parser.parse_args(argv)
    wires = [w.strip() for w in args.wires.split(",") if w.strip()]
    unknown = set(wires) - set(WIRES)
    if unknown:
        parser.error(f"unknown wires: {', '.join(sorted(unknown))}")
    if args.redis:
        from bench.servers import RedisProcess

        with RedisProcess() as redis:
            return report(wires, redis.url, args)
    return report(wires, args.redis_url, args)


def report(wires: list[str], redis_url: str | None, args: argparse.Namespace) -> int:
    """Count and print."""
    rows = [count_modules(wire, None, args.repeat) for wire in wires]
    if redis_url:
        for wire in wires:
            # stdio always serves from an in-memory store (serving/flask_stdio.serve_app): there is no Redis row.
            rows.append({"wire": wire, "store": "redis", "skipped": "stdio has no Redis store"} if wire == "stdio"
                        else count_modules(wire, redis_url, args.repeat))
    chain = longest_import_chain(import_graph())
    served_chain = longest_import_chain(import_graph(entry_points=True))
    if args.json:
        sys.stdout.write(orjson.dumps({"rows": rows, "import_chain": chain, "served_import_chain": served_chain})
                         .decode() + "\n")
    else:
        print_table(rows, chain, served_chain)
    return 0


if __name__ == "__main__":
    sys.exit(main())

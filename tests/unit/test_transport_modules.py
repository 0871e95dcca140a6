"""Each transport owns its whole surface in one module, written against the WSGI environ, without Flask's globals."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from flask_mcp_gevent.transports import legacy_sse, streamable_http

TRANSPORTS = Path(legacy_sse.__file__).parent
MCP_SERVER = TRANSPORTS.parent
FLASK_GLOBALS = {"request", "g", "current_app", "session"}


def imports_of(path: Path) -> list[tuple[str, str]]:
    """(module, name) for every `from module import name` and ("module", "") for every `import module`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
    return found


@pytest.mark.parametrize("path", sorted(TRANSPORTS.glob("*.py")), ids=lambda path: path.name)
def test_no_transport_reads_flask_globals_or_the_web_layer(path):
    for module, name in imports_of(path):
        assert not (module.startswith("flask") and name in FLASK_GLOBALS), f"{path.name} imports flask.{name}"
        assert not module.startswith("flask_mcp_gevent.web"), f"{path.name} imports {module}"


def test_streamable_http_does_not_import_the_legacy_transport():
    modules = {module for module, _ in imports_of(Path(streamable_http.__file__))}
    assert "flask_mcp_gevent.transports.legacy_sse" not in modules


@pytest.mark.parametrize("module, functions", [
    (legacy_sse, ("legacy_get", "legacy_post")),
    (streamable_http, ("streamable_get", "streamable_post", "streamable_delete")),
])
def test_each_http_transport_method_takes_the_server_and_the_caller_from_the_route(module, functions):
    # What the request says arrives as arguments (the environ, or what the route already read from it, like a
    # legacy POST's ?session_id=): never through Flask's globals (the test above).
    for name in functions:
        parameters = list(inspect.signature(getattr(module, name)).parameters)
        assert parameters[0] == "server", name
        assert parameters[2] == "caller", name
        assert parameters[1] in {"environ", "session_id"}, name


def test_the_session_header_is_read_in_one_place():
    readers = sorted(path.relative_to(MCP_SERVER).as_posix() for path in MCP_SERVER.rglob("*.py")
                     if "HTTP_MCP_SESSION_ID" in path.read_text() or "sessionId" in path.read_text())
    assert readers == ["session.py"]


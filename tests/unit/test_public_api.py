"""What a tool author imports from the package: every name in `__all__`, the light ones without Flask."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import flask_mcp_gevent
import mcp_tools

ROOT = Path(__file__).resolve().parents[2]
AUTHOR_NAMES = {"Context", "ToolError", "ToolResult", "text", "image", "audio", "embedded_resource", "resource_link",
                "ProtocolError", "ResourceNotFound", "InputRequest", "Completion", "tool", "resource",
                "resource_template", "prompt", "PromptArgument", "Registry", "RegistryError"}


def run_python(code: str) -> str:
    """Run code in a fresh interpreter from the repository root; return what it printed."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_all_lists_mcp_and_every_name_a_tool_author_needs():
    assert set(flask_mcp_gevent.__all__) == AUTHOR_NAMES | {"MCP"}
    for name in flask_mcp_gevent.__all__:
        assert getattr(flask_mcp_gevent, name) is not None


def test_the_light_names_import_neither_flask_nor_the_server():
    loaded = run_python(
        "import sys\n"
        "import flask_mcp_gevent, flask_mcp_gevent.toolkit\n"
        "from flask_mcp_gevent import (Context, ToolError, ToolResult, text, image, audio, embedded_resource,\n"
        "    resource_link, ProtocolError, ResourceNotFound, InputRequest, Completion, tool, resource,\n"
        "    resource_template, prompt, PromptArgument, Registry, RegistryError)\n"
        "print(' '.join(sorted(name for name in sys.modules if name.split('.')[0] in\n"
        "    ('flask', 'werkzeug', 'gevent', 'jsonrpcserver') or name.startswith('flask_mcp_gevent.')\n"
        "    and not name.startswith('flask_mcp_gevent.toolkit'))))\n")
    assert loaded == ""


def test_mcp_is_imported_on_first_use():
    assert run_python("import sys\nfrom flask_mcp_gevent import MCP\nprint('flask' in sys.modules, MCP.__name__)") \
        == "True MCP"


def test_mcp_tools_re_exports_the_same_names():
    assert set(mcp_tools.__all__) == AUTHOR_NAMES
    assert all(getattr(mcp_tools, name) is getattr(flask_mcp_gevent, name) for name in mcp_tools.__all__)

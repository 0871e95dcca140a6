"""The package as a user installs it: a wheel built from the checkout, fresh venvs outside it, a host app to serve.

Shared by tests/e2e/test_wheel_install.py (every extra) and tests/e2e/test_default_install.py (none). pip uses
the package index this machine is configured with, as a user's pip would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import venv
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.server_process import ROOT

DISTRIBUTION = "flask_mcp_gevent"
HOST_APP = textwrap.dedent('''
    from flask import Flask
    from flask_mcp_gevent import MCP

    app = Flask(__name__)
    mcp = MCP(app)

    @app.get("/")
    def home():
        return "host"

    @mcp.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b
''')
# A 2026-07-28 tools/call needs no session: one POST carries the protocol version and client in _meta.
STATELESS_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
                  "io.modelcontextprotocol/clientCapabilities": {}}


def build_wheel(out: Path) -> Path:
    """Build the checkout's wheel into out (`pip wheel`, no dependencies) and return it."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out)],
                   check=True, timeout=300, cwd=out)
    [built] = out.glob(f"{DISTRIBUTION}-*.whl")
    return built


def install_in_new_venv(home: Path, requirement: str) -> Path:
    """Make a venv at home, pip install requirement (a wheel path, with [extras] or not) into it; its bin directory."""
    venv.create(home, with_pip=True)
    subprocess.run([str(home / "bin" / "python"), "-m", "pip", "install", "-q", requirement], check=True,
                   timeout=600, cwd=home)
    return home / "bin"


def clean_environ() -> dict[str, str]:
    """This process's environment without MCP_* settings or a PYTHONPATH that could reach the checkout."""
    return {key: value for key, value in os.environ.items() if not key.startswith("MCP_") and key != "PYTHONPATH"}


def healthy(base: str) -> bool:
    """Whether the MCP health endpoint answers 200."""
    try:
        return httpx.get(base + "/mcp/healthz", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def call_add(base: str, a: int, b: int) -> Any:
    """The host app's add tool called over MCP 2026-07-28 (one POST, no session); the HTTP answer."""
    return httpx.post(base + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": a, "b": b}, "_meta": STATELESS_META}},
        headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "add",
                 "Accept": "application/json, text/event-stream"})

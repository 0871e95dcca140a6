"""The TypeScript SDK client (@modelcontextprotocol/client 2.4) pinned to 2026-07-28, against the real server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.server_process import ServerProcess

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE.parent / "conformance" / "node_modules"
NODE = NODE_MODULES / ".bin" / "node"
SCRIPT = HERE / "ts_client" / "stateless_client.mjs"
TIMEOUT_S = 60

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not (NODE_MODULES / "@modelcontextprotocol" / "client").exists(),
                       reason="run scripts/test.sh (npm install in tests/conformance) first"),
]


def run_client(url: str, resource_uri: str) -> dict:
    """Run the pinned TypeScript client against url; its one JSON line of results."""
    done = subprocess.run(
        [str(NODE), str(SCRIPT), url, resource_uri], capture_output=True, text=True, timeout=TIMEOUT_S,
        env={**os.environ, "MCP_NODE_MODULES": str(NODE_MODULES)},
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"no output (exit {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(lines[-1])


def test_typescript_client_pinned_to_2026_07_28_lists_calls_reads_and_gets_a_prompt():
    with ServerProcess() as server:
        result = run_client(server.url, "config://server")
    assert "error" not in result, result["error"]
    assert result["era"] == "modern"  # the TS client's word for the 2026-07-28 era
    assert result["protocolVersion"] == "2026-07-28"
    assert {"add", "echo", "get_time", "count_down"} <= set(result["tools"])
    assert result["add"] == ["5"]
    assert result["addStructured"] == {"result": 5}
    [resource] = result["resource"]
    assert resource["uri"] == "config://server"
    assert resource["mimeType"] == "application/json"
    assert isinstance(json.loads(resource["text"]), dict)
    [message] = result["prompt"]
    assert "```python\nx = 1\n```" in message

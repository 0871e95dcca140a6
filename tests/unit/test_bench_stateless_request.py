"""The bench's 2026-07-28 request: the routing headers and `_meta` a stateless call carries."""

from __future__ import annotations

import orjson
import pytest

pytest.importorskip("aiohttp", reason="bench/ needs requirements-dev.txt (the other Pythons' runs install less)")

from bench.sessions import stateless_request  # noqa: E402

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench-load", "version": "1.0.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def test_a_tool_call_names_its_version_method_and_tool_in_headers_and_meta():
    headers, body = stateless_request(7, "tools/call", {"name": "echo", "arguments": {"text": "hello"}})
    assert headers == {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
    assert orjson.loads(body) == {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                  "params": {"name": "echo", "arguments": {"text": "hello"}, "_meta": META}}


def test_discover_has_no_name_header_and_a_resource_read_names_its_uri():
    headers, body = stateless_request(1, "server/discover", {})
    assert headers == {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
    assert orjson.loads(body)["params"] == {"_meta": META}
    headers, _ = stateless_request(2, "resources/read", {"uri": "config://server"})
    assert headers["Mcp-Name"] == "config://server"

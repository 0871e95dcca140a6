"""The echo tool's tests: the file to copy for your own tool, as tests/protocol/test_<your tool>.py.

`make_rpc(version)` opens a session at that protocol version on an in-process server that serves mcp_tools/
(no HTTP, nothing to start); `request(method, params)` sends one JSON-RPC request and returns its response.
Run just this file with `scripts/test.sh --quick tests/protocol/test_echo.py`.
"""


def test_echo_returns_its_text(make_rpc):
    response = make_rpc("2025-06-18").request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert response["result"]["isError"] is False
    assert response["result"]["content"] == [{"type": "text", "text": "hi"}]
    assert response["result"]["structuredContent"] == {"result": "hi"}


def test_echo_refuses_arguments_outside_its_schema(make_rpc):
    response = make_rpc("2025-06-18").request("tools/call", {"name": "echo", "arguments": {"text": 42}})
    assert response["error"]["code"] == -32602

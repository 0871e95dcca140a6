"""tools/list: the seed's tools, described in the shape each protocol version knows."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.protocol.pagination import encode_cursor


def tools_by_name(rpc) -> dict:
    """List the tools and index them by name."""
    result = rpc.request("tools/list", {}, request_id=2)["result"]
    return {t["name"]: t for t in result["tools"]}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_tools_list_has_the_seed_tools_with_their_input_schemas(make_rpc, version):
    tools = tools_by_name(make_rpc(version))
    assert {"add", "echo", "get_time"} <= set(tools)
    assert tools["add"]["inputSchema"]["required"] == ["a", "b"]
    assert tools["echo"]["inputSchema"]["properties"]["text"]["type"] == "string"
    assert tools["get_time"]["inputSchema"] == {"type": "object", "properties": {}, "additionalProperties": False}
    for tool in tools.values():
        assert tool["description"]
        assert tool["inputSchema"]["type"] == "object"


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_output_schema_is_advertised_from_2025_06_18(make_rpc, version):
    tools = tools_by_name(make_rpc(version))
    assert tools["add"]["outputSchema"]["properties"]["result"]["type"] == "integer"
    # echo declares none: its `-> str` says what its structuredContent {"result": text} is.
    assert tools["echo"]["outputSchema"] == {"type": "object", "properties": {"result": {"type": "string"}},
                                             "required": ["result"]}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26"])
def test_output_schema_is_not_advertised_before_2025_06_18(make_rpc, version):
    tools = tools_by_name(make_rpc(version))
    assert all("outputSchema" not in t for t in tools.values())


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_annotations_are_advertised_from_2025_03_26(make_rpc, version):
    tools = tools_by_name(make_rpc(version))
    assert tools["add"]["annotations"] == {"readOnlyHint": True}


def test_annotations_are_not_advertised_on_2024_11_05(make_rpc):
    tools = tools_by_name(make_rpc("2024-11-05"))
    assert all("annotations" not in t for t in tools.values())


def test_tools_list_without_params_works(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert rpc.one('{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}')["result"]["tools"]


def test_tools_list_pages_with_an_opaque_cursor(make_server, make_rpc):
    server = make_server({"MCP_PAGE_SIZE": "2"})
    rpc = make_rpc("2025-06-18", on=server)
    first = rpc.request("tools/list", {}, request_id=2)["result"]
    second = rpc.request("tools/list", {"cursor": first["nextCursor"]}, request_id=3)["result"]
    registered = list(server.registry.tools)
    assert [t["name"] for t in first["tools"]] == registered[:2]
    assert [t["name"] for t in second["tools"]] == registered[2:4]
    assert ("nextCursor" in second) == (len(registered) > 4)


def test_tools_list_rejects_a_cursor_it_did_not_make(make_rpc):
    response = make_rpc("2025-06-18").request("tools/list", {"cursor": "not-ours"})
    assert response["error"]["code"] == -32602


def test_tools_list_rejects_a_cursor_past_the_end(make_rpc):
    response = make_rpc("2025-06-18").request("tools/list", {"cursor": encode_cursor(10_000)})
    assert response["error"]["code"] == -32602

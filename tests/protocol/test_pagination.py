"""Opaque cursors on every list method (MCP_PAGE_SIZE): full walks, the last page, and every invalid cursor."""

from __future__ import annotations

import base64

import pytest

from mcp_tools import Registry

# method, result key, the registry table it lists, the field that names an item
LISTS = [
    ("tools/list", "tools", "tools", "name"),
    ("resources/list", "resources", "resources", "uri"),
    ("resources/templates/list", "resourceTemplates", "templates", "uriTemplate"),
    ("prompts/list", "prompts", "prompts", "name"),
]
METHODS = [method for method, *_ in LISTS]


@pytest.fixture
def registry() -> Registry:
    """Enough of everything for several pages: the shipped items plus the conformance fixtures."""
    return Registry.discover(plugins=["tests.conformance.fixtures"])


def walk(rpc, method: str, key: str) -> tuple[list[dict], list[str]]:
    """Follow nextCursor to the end; return every item and every cursor given."""
    items, cursors, params = [], [], {}
    for request_id in range(1, 200):
        result = rpc.request(method, params, request_id=request_id)["result"]
        items.extend(result[key])
        if "nextCursor" not in result:
            return items, cursors
        cursors.append(result["nextCursor"])
        params = {"cursor": result["nextCursor"]}
    raise AssertionError("pagination did not end")


def b64(text: str) -> str:
    """Base64 of text, the way a client might forge a cursor."""
    return base64.urlsafe_b64encode(text.encode()).decode()


@pytest.mark.parametrize(("method", "key", "table", "field"), LISTS)
@pytest.mark.parametrize("page_size", ["1", "2", "3"])
def test_walking_the_cursors_returns_every_item_once_in_order(make_server, make_rpc, method, key, table, field,
                                                              page_size):
    server = make_server({"MCP_PAGE_SIZE": page_size},
                         registry=Registry.discover(plugins=["tests.conformance.fixtures"]))
    items, cursors = walk(make_rpc("2025-06-18", on=server), method, key)
    expected = list(getattr(server.registry, table))
    assert [item[field] for item in items] == expected
    size = int(page_size)
    assert len(cursors) == (len(expected) - 1) // size
    assert len(set(cursors)) == len(cursors)


@pytest.mark.parametrize(("method", "key", "table", "field"), LISTS)
def test_one_page_holds_everything_by_default_and_has_no_next_cursor(make_rpc, server, method, key, table, field):
    result = make_rpc("2025-06-18").request(method)["result"]
    assert [item[field] for item in result[key]] == list(getattr(server.registry, table))
    assert "nextCursor" not in result


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "cursor",
    ["not-a-cursor", "", "2", 2, ["x"], {"offset": 2}, b64("o:-1"), b64("x:2"), b64("o:two"), b64("o:100000"),
     "A" * 65, "%%%%", b64("o:") + "\u00e9"],
    ids=["garbage", "empty", "digit-string", "integer", "list", "object", "negative", "wrong-prefix",
         "not-a-number", "past-the-end", "too-long", "not-base64", "non-ascii"],
)
def test_an_invalid_cursor_is_invalid_params_on_every_list_method(make_rpc, method, cursor):
    response = make_rpc("2025-06-18").request(method, {"cursor": cursor}, request_id=9)
    assert response["id"] == 9
    assert response["error"]["code"] == -32602
    assert "cursor" in response["error"]["message"]


@pytest.mark.parametrize("method", METHODS)
def test_a_null_cursor_means_the_first_page(make_rpc, method):
    assert "result" in make_rpc("2025-06-18").request(method, {"cursor": None})


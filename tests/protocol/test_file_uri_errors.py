"""File URIs that name no possible file: a NUL byte, a symlink loop, an over-long name or path.

Each is the client's mistake, so it gets -32002 (or -32602 for the malformed NUL) with
the request's id, never -32603; a completion of such a path suggests nothing.
"""

from __future__ import annotations

import pytest

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND


@pytest.fixture
def root(tmp_path):
    """A files root with one file and a symlink loop."""
    root = (tmp_path / "files").resolve()
    root.mkdir()
    (root / "notes.txt").write_text("hello")
    (root / "loop-a").symlink_to(root / "loop-b")
    (root / "loop-b").symlink_to(root / "loop-a")
    return root


@pytest.fixture
def rpc(make_server, make_rpc, root):
    """An initialized session of a server serving root."""
    return make_rpc("2025-06-18", on=make_server({"MCP_FILES_ROOT": str(root)}))


BAD_PATHS = {
    "percent-encoded-nul": ("/notes%00.txt", INVALID_PARAMS),
    "raw-nul": ("/notes\x00.txt", INVALID_PARAMS),
    "symlink-loop": ("/loop-a", RESOURCE_NOT_FOUND),
    "through-a-symlink-loop": ("/loop-a/notes.txt", RESOURCE_NOT_FOUND),
    "over-long-name": ("/" + "x" * 300, RESOURCE_NOT_FOUND),
    "over-long-path": ("/" + ("d" * 200 + "/") * 25 + "e", RESOURCE_NOT_FOUND),
}


@pytest.mark.parametrize(("path", "code"), BAD_PATHS.values(), ids=BAD_PATHS.keys())
def test_reading_a_file_uri_that_names_no_possible_file_is_a_client_error(rpc, root, path, code):
    uri = f"file://{root}{path}"
    answer = rpc.request("resources/read", {"uri": uri}, request_id="bad")
    assert answer == {"jsonrpc": "2.0", "id": "bad", "error": {**answer["error"], "code": code, "data": {"uri": uri}}}


@pytest.mark.parametrize(("path", "code"), BAD_PATHS.values(), ids=BAD_PATHS.keys())
def test_subscribing_to_a_file_uri_that_names_no_possible_file_is_a_client_error(rpc, root, path, code):
    answer = rpc.request("resources/subscribe", {"uri": f"file://{root}{path}"}, request_id="bad")
    assert (answer["id"], answer["error"]["code"]) == ("bad", code)


def test_a_file_that_does_not_exist_yet_may_still_be_subscribed_to(rpc, root):
    assert rpc.request("resources/subscribe", {"uri": f"file://{root}/later.txt"})["result"] == {}


def test_the_nul_refusal_says_what_is_wrong(rpc, root):
    answer = rpc.request("resources/read", {"uri": f"file://{root}/a%00b"})
    assert answer["error"]["message"] == "Refused: a file path cannot contain a NUL byte"


@pytest.mark.parametrize("path", [path for path, _ in BAD_PATHS.values()], ids=BAD_PATHS.keys())
def test_completing_such_a_path_suggests_nothing(rpc, root, path):
    answer = rpc.one(dumps({"jsonrpc": "2.0", "id": 9, "method": "completion/complete", "params": {
        "ref": {"type": "ref/resource", "uri": "file://{+path}"},
        "argument": {"name": "path", "value": f"{root}{path}/"}}}))
    assert answer == {"jsonrpc": "2.0", "id": 9,
                      "result": {"completion": {"values": [], "hasMore": False, "total": 0}}}

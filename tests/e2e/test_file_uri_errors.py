"""File URIs that name no possible file, over raw HTTP on a real gunicorn: client errors with the request's id.

A NUL byte (percent-encoded, or raw in the JSON string) is malformed: -32602. A
symlink loop, a name over NAME_MAX or a path over PATH_MAX names nothing: -32002.
Never a 5xx, never -32603, on Streamable HTTP and on a legacy stream alike.
"""

from __future__ import annotations

import pytest

from flask_mcp_gevent.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND
from tests.e2e.raw_clients import LegacyStream, StreamableSession, client, request
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e

BAD_PATHS = {
    "percent-encoded-nul": ("/notes%00.txt", INVALID_PARAMS),
    "raw-nul": ("/notes\x00.txt", INVALID_PARAMS),
    "symlink-loop": ("/loop-a", RESOURCE_NOT_FOUND),
    "over-long-name": ("/" + "x" * 300, RESOURCE_NOT_FOUND),
    "over-long-path": ("/" + ("d" * 200 + "/") * 25 + "e", RESOURCE_NOT_FOUND),
}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A files root with a file and a symlink loop."""
    root = tmp_path_factory.mktemp("uri-errors").resolve()
    (root / "notes.txt").write_text("hello")
    (root / "loop-a").symlink_to(root / "loop-b")
    (root / "loop-b").symlink_to(root / "loop-a")
    return root


@pytest.fixture(scope="module")
def files_server(root):
    """A gunicorn serving root."""
    with ServerProcess(env={"MCP_FILES_ROOT": str(root)}) as process:
        yield process


@pytest.mark.parametrize(("path", "code"), BAD_PATHS.values(), ids=BAD_PATHS.keys())
def test_streamable_http_answers_200_with_the_client_error_and_the_id(files_server, root, path, code):
    uri = f"file://{root}{path}"
    with client() as http:
        session = StreamableSession(http, files_server.url)
        answer = session.post(request("resources/read", {"uri": uri}, "bad-uri"), accept="application/json")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["id"], body["error"]["code"], body["error"]["data"]) == ("bad-uri", code, {"uri": uri})
    assert "Traceback" not in answer.text and "Errno" not in answer.text


@pytest.mark.parametrize(("path", "code"), BAD_PATHS.values(), ids=BAD_PATHS.keys())
def test_a_legacy_stream_gets_the_client_error_with_the_id(files_server, root, path, code):
    with client() as http, LegacyStream(http, files_server.base_url) as stream:
        stream.open()
        answer = stream.call(request("resources/read", {"uri": f"file://{root}{path}"}, 41))
    assert (answer["id"], answer["error"]["code"]) == (41, code)


def test_the_server_logged_no_internal_error(files_server, root):
    with client() as http:
        session = StreamableSession(http, files_server.url)
        for path, _ in BAD_PATHS.values():
            session.post(request("resources/read", {"uri": f"file://{root}{path}"}), accept="application/json")
    assert "status=error:-32603" not in files_server.read_log()
    assert "Traceback" not in files_server.read_log()

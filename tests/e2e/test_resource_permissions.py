"""Resource permissions on a real gunicorn with API keys: completion and symlinks show nothing a principal may not read.

The files root holds public/ and private/, with a file link and a directory link from
public/ into private/. `reader` may see the file:// template and read public/* only,
`outsider` may read config://* only, `admin` may read everything.
"""

from __future__ import annotations

import json

import httpx
import pytest

from flask_mcp_gevent.auth.api_keys import hash_key, new_key
from flask_mcp_gevent.errors import PERMISSION_DENIED
from tests.e2e.raw_clients import READ_TIMEOUT_S, StreamableSession, request
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e

FILES = "file://{+path}"
KEYS = {"reader": new_key(), "outsider": new_key(), "admin": new_key()}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """public/readme.txt, private/secret.txt, public/link.txt -> the secret, public/linkdir -> private/."""
    root = tmp_path_factory.mktemp("permissions-root").resolve()
    (root / "public").mkdir()
    (root / "private").mkdir()
    (root / "public" / "readme.txt").write_text("public words")
    (root / "private" / "secret.txt").write_text("secret words")
    (root / "public" / "link.txt").symlink_to(root / "private" / "secret.txt")
    (root / "public" / "linkdir").symlink_to(root / "private")
    return root


@pytest.fixture(scope="module")
def secured(tmp_path_factory, root):
    """A gunicorn serving the root to the three API-key principals."""
    grants = {"reader": [FILES, f"file://{root}/public/*"], "outsider": ["config://*"], "admin": ["*"]}
    keys_file = tmp_path_factory.mktemp("permission-keys") / "keys.json"
    keys_file.write_text(json.dumps({hash_key(KEYS[name]): {"principal": name, "resources": resources}
                                     for name, resources in grants.items()}))
    with ServerProcess(env={"MCP_API_KEYS_FILE": str(keys_file), "MCP_FILES_ROOT": str(root)}) as server:
        yield server


@pytest.fixture
def session_of(secured):
    """Open Streamable HTTP sessions as a principal; close their clients afterwards."""
    clients: list[httpx.Client] = []

    def open_as(principal: str) -> StreamableSession:
        http = httpx.Client(headers={"Authorization": f"Bearer {KEYS[principal]}"},
                            timeout=httpx.Timeout(READ_TIMEOUT_S, connect=5.0))
        clients.append(http)
        return StreamableSession(http, secured.url)

    yield open_as
    for http in clients:
        http.close()


def complete_path(session: StreamableSession, typed: str) -> dict:
    """The answer to completing the file template's path."""
    return session.call(request("completion/complete", {"ref": {"type": "ref/resource", "uri": FILES},
                                                        "argument": {"name": "path", "value": typed}}, "done"))


def test_a_principal_who_may_not_see_the_template_gets_permission_denied_and_no_file_name(session_of, root):
    answer = complete_path(session_of("outsider"), f"{root}/")
    assert (answer["id"], answer["error"]["code"]) == ("done", PERMISSION_DENIED)
    assert "secret" not in json.dumps(answer) and "readme" not in json.dumps(answer)


def test_completion_shows_a_restricted_principal_only_what_it_may_read(session_of, root):
    completion = complete_path(session_of("reader"), f"{root}/")["result"]["completion"]
    assert completion == {"values": [f"{root}/public/readme.txt"], "hasMore": False, "total": 1}


def test_completion_shows_the_allowed_principal_everything(session_of, root):
    values = complete_path(session_of("admin"), f"{root}/")["result"]["completion"]["values"]
    assert values == [f"{root}/private/secret.txt", f"{root}/public/link.txt", f"{root}/public/readme.txt"]


@pytest.mark.parametrize("path", ["public/link.txt", "public/linkdir/secret.txt"], ids=["file-link", "directory-link"])
@pytest.mark.parametrize("method", ["resources/read", "resources/subscribe"])
def test_a_link_out_of_the_grant_is_refused_without_naming_its_target(session_of, root, method, path):
    uri = f"file://{root}/{path}"
    answer = session_of("reader").call(request(method, {"uri": uri}, "linked"))
    assert (answer["id"], answer["error"]["code"], answer["error"]["data"]) == (
        "linked", PERMISSION_DENIED, {"resource": uri})
    assert "private" not in answer["error"]["message"].replace(path, "")


@pytest.mark.parametrize("method", ["resources/read", "resources/subscribe"])
def test_the_restricted_principal_still_reads_and_subscribes_inside_its_grant(session_of, root, method):
    answer = session_of("reader").call(request(method, {"uri": f"file://{root}/public/readme.txt"}))
    assert "result" in answer, answer


def test_the_allowed_principal_reads_through_the_links(session_of, root):
    admin = session_of("admin")
    for path in ("public/link.txt", "public/linkdir/secret.txt"):
        answer = admin.call(request("resources/read", {"uri": f"file://{root}/{path}"}))
        assert answer["result"]["contents"][0]["text"] == "secret words"

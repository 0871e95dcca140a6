"""Resource permissions on completion, reads and subscriptions (a listen's too): values and links a principal may not
read stay hidden.

A files root holds public/ and private/, with links under public/ into private/.
`reader` may see the file:// template and read public/* only; `outsider` may read
config://* only; `admin` may read everything.
"""

from __future__ import annotations

import itertools
import json

import gevent
import pytest

from flask_mcp_gevent.auth.principal import Principal
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.errors import PERMISSION_DENIED
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.stateless.metadata import ephemeral_session
from mcp_tools import Registry, resource_template
from tests.protocol.conftest import JOIN_TIMEOUT_S, Rpc, caller
from tests.support.waiting import wait_until

FILES = "file://{+path}"


@resource_template("mem://{id}", complete=lambda name, value: ["alpha", "beta", "gamma"])
def memory(id: str) -> str:
    """A template whose completer knows three ids."""
    return id


@resource_template("mem://endless/{id}", complete=lambda name, value: (str(n) for n in itertools.count()))
def endless(id: str) -> str:
    """A template whose completer never ends."""
    return id


@pytest.fixture
def registry() -> Registry:
    """The shipped tools and resources, plus this module's templates."""
    registry = Registry.discover()
    registry.add_function(memory)
    registry.add_function(endless)
    return registry


@pytest.fixture
def root(tmp_path):
    """public/readme.txt, private/secret.txt, and links from public/ into private/."""
    root = (tmp_path / "files").resolve()
    (root / "public").mkdir(parents=True)
    (root / "private").mkdir()
    (root / "public" / "readme.txt").write_text("public words")
    (root / "private" / "secret.txt").write_text("secret words")
    (root / "public" / "link.txt").symlink_to(root / "private" / "secret.txt")
    (root / "public" / "linkdir").symlink_to(root / "private")
    return root


@pytest.fixture
def server(make_server, registry, root):
    """A server serving the files root, with the three principals' grants."""
    return make_server({"MCP_FILES_ROOT": str(root), "MCP_COMPLETION_SCAN_MAX": "50"}, registry=registry)


@pytest.fixture
def grants(root) -> dict[str, tuple[str, ...]]:
    """The resources each principal's credential grants."""
    return {
        "reader": (FILES, f"file://{root}/public/*", "mem://{id}", "mem://alpha", "mem://gamma", "mem://endless/*"),
        "outsider": ("config://*",),
        "admin": ("*",),
    }


@pytest.fixture
def session_of(grants):
    """An initialized session of a principal, each request sent with that principal's credential."""

    def open_session(server, principal: str, resources: tuple[str, ...] | None = None) -> Rpc:
        granted = grants[principal] if resources is None else resources
        rpc = Rpc(server, server.open_session("streamable", principal), caller(principal, resources=granted))
        rpc.initialize()
        return rpc

    return open_session


def complete(rpc: Rpc, ref_uri: str, name: str, value: str) -> dict:
    """The response to completion/complete of a template variable."""
    return rpc.request("completion/complete", {"ref": {"type": "ref/resource", "uri": ref_uri},
                                               "argument": {"name": name, "value": value}}, request_id="c")


# completion
def test_a_principal_who_may_not_see_the_template_gets_no_file_names(server, root, session_of):
    answer = complete(session_of(server, "outsider"), FILES, "path", f"{root}/")
    assert answer["error"]["code"] == PERMISSION_DENIED
    assert answer["id"] == "c"
    assert "secret" not in json.dumps(answer) and "readme" not in json.dumps(answer)


def test_completion_suggests_only_files_the_principal_may_read_through_links_too(server, root, session_of):
    completion = complete(session_of(server, "reader"), FILES, "path", f"{root}/")["result"]["completion"]
    # private/secret.txt is outside the grant; public/link.txt is inside it but names private/secret.txt.
    assert completion == {"values": [f"{root}/public/readme.txt"], "hasMore": False, "total": 1}


def test_the_allowed_principal_still_gets_every_file(server, root, session_of):
    values = complete(session_of(server, "admin"), FILES, "path", f"{root}/")["result"]["completion"]["values"]
    assert values == [f"{root}/private/secret.txt", f"{root}/public/link.txt", f"{root}/public/readme.txt"]


def test_any_template_s_values_are_filtered_by_the_uri_they_make(server, session_of):
    completion = complete(session_of(server, "reader"), "mem://{id}", "id", "")["result"]["completion"]
    assert completion == {"values": ["alpha", "gamma"], "hasMore": False, "total": 2}


def test_filtering_an_endless_completer_stops_at_the_scan_bound(server, session_of):
    # None of the first MCP_COMPLETION_SCAN_MAX values is refused here, so the 100-value cap is never reached...
    capped = complete(session_of(server, "reader"), "mem://endless/{id}", "id", "")["result"]["completion"]
    assert (len(capped["values"]), capped["hasMore"]) == (50, True)
    # ...and a principal refused every value gets none, without looking forever, and no hint that there were many.
    refused_every_value = session_of(server, "reader", resources=("mem://endless/{id}",))
    refused = complete(refused_every_value, "mem://endless/{id}", "id", "")["result"]["completion"]
    assert refused == {"values": [], "hasMore": False, "total": 0}


def test_a_large_directory_the_principal_may_not_read_looks_like_an_empty_one(server, root, session_of):
    for n in range(80):  # more entries than MCP_COMPLETION_SCAN_MAX (50) reads
        (root / "private" / f"file-{n:02}.txt").write_text("secret")
    large = complete(session_of(server, "reader"), FILES, "path", f"{root}/private/")["result"]["completion"]
    small = complete(session_of(server, "reader"), FILES, "path", f"{root}/public/nothing-here")["result"]
    assert large == small["completion"] == {"values": [], "hasMore": False, "total": 0}
    everything = complete(session_of(server, "admin"), FILES, "path", f"{root}/private/")["result"]["completion"]
    assert everything["hasMore"] is True and len(everything["values"]) == 50  # the admin is told there is more


# reads and subscriptions through links
@pytest.mark.parametrize("path", ["public/link.txt", "public/linkdir/secret.txt"], ids=["file-link", "directory-link"])
@pytest.mark.parametrize("method", ["resources/read", "resources/subscribe"])
def test_a_link_to_a_file_outside_the_grant_is_refused_naming_the_link(server, root, method, path, session_of):
    uri = f"file://{root}/{path}"
    answer = session_of(server, "reader").request(method, {"uri": uri}, request_id="r")
    assert answer["error"] == {"code": PERMISSION_DENIED, "data": {"resource": uri},
                               "message": f"Permission denied: you may not use resource '{uri}'"}
    assert answer["id"] == "r"


@pytest.mark.parametrize("method", ["resources/read", "resources/subscribe"])
def test_files_inside_the_grant_are_still_read_and_subscribed(server, root, method, session_of):
    answer = session_of(server, "reader").request(method, {"uri": f"file://{root}/public/readme.txt"})
    assert "result" in answer, answer


def test_the_allowed_principal_reads_through_the_link(server, root, session_of):
    answer = session_of(server, "admin").request("resources/read", {"uri": f"file://{root}/public/link.txt"})
    assert answer["result"]["contents"][0]["text"] == "secret words"


# subscriptions/listen (2026-07-28): its resourceSubscriptions are subscriptions too
def listened_uris(server, principal: Principal, uris: list[str]) -> list[str]:
    """The resourceSubscriptions a listen of principal's naming uris is acknowledged with."""
    body = {"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": uris},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}
    message = parse_body(dumps(body)).messages[0]
    sent: list[dict] = []
    listening = gevent.spawn(server.handle_request, ephemeral_session(message.meta, principal.name), message,
                             sent.append, principal)
    try:
        wait_until(lambda: sent or listening.ready(), timeout=JOIN_TIMEOUT_S, what="the acknowledgment")
        assert sent, listening.value
        return sent[0]["params"]["notifications"]["resourceSubscriptions"]
    finally:
        listening.kill()


def test_a_listen_honours_no_link_or_dot_dot_to_a_file_outside_the_grant(server, root, grants):
    readme = f"file://{root}/public/readme.txt"
    escapes = [f"file://{root}/public/link.txt", f"file://{root}/public/linkdir/secret.txt",
               f"file://{root}/public/../private/secret.txt", f"file://{root}/public/%2e%2e/private/secret.txt"]
    reader = caller("reader", resources=grants["reader"])
    assert listened_uris(server, reader, [*escapes, readme]) == [readme]
    admin = caller("admin", resources=grants["admin"])
    assert listened_uris(server, admin, escapes[:2]) == escapes[:2]

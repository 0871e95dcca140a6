"""The official SDK client against the real server, over both transports: resources, templates, subscriptions.

Reads are checked byte for byte (text, base64 blob, template substitution), the file://
template against a real MCP_FILES_ROOT with escapes planted around it, and updates only
reach the URIs a session subscribed to.
"""

from __future__ import annotations

import json

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.conformance.fixtures import RED_PIXEL_PNG
from tests.e2e.sdk_sessions import (
    b64,
    dump,
    expected_registry,
    feature_env,
    list_every_page,
    rpc_error,
    session_to,
)
from tests.e2e.server_process import ServerProcess
from tests.support.waiting import wait_until_async

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

WATCHED = "test://watched-resource"
NOT_WATCHED = "test://static-text"
SENTINEL = "test://static-binary"
BINARY = bytes([0, 159, 146, 150, 255])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A files root with a text file, a binary file, a nested file and a symlink that points outside."""
    root = tmp_path_factory.mktemp("files-root").resolve()
    outside = tmp_path_factory.mktemp("outside").resolve()
    (outside / "secret.txt").write_text("outside the root")
    (root / "notes.txt").write_text("hello from the files root\n")
    (root / "data.bin").write_bytes(BINARY)
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n")
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    return root, outside


@pytest.fixture(scope="module")
def resource_server(files):
    """A gunicorn with the conformance fixtures and feature tools, serving files from the files root."""
    root, _ = files
    with ServerProcess(env=feature_env(MCP_FILES_ROOT=str(root))) as process:
        yield process


# listing
async def test_resources_list_pages_hold_every_resource_once_with_its_description(resource_server, transport):
    async with session_to(resource_server, transport) as (session, _):
        resources, cursors = await list_every_page(session.list_resources, "resources")
    assert [r.uri for r in resources] == list(expected_registry().resources)
    assert cursors
    by_uri = {r.uri: dump(r) for r in resources}
    assert by_uri["test://static-text"] == {
        "uri": "test://static-text", "name": "static_text", "description": "A fixed text resource.",
        "mimeType": "text/plain",
    }
    assert by_uri["config://server"]["mimeType"] == "application/json"


async def test_templates_list_describes_both_templates(resource_server, transport):
    async with session_to(resource_server, transport) as (session, _):
        templates, _ = await list_every_page(session.list_resource_templates, "resource_templates")
    assert dump(templates) == [
        {"uriTemplate": "file://{+path}", "name": "files",
         "description": "A file under MCP_FILES_ROOT, by absolute path."},
        {"uriTemplate": "test://template/{id}/data", "name": "template_data",
         "description": "Data for an id, substituted from the URI.", "mimeType": "application/json"},
    ]


# reading
async def test_a_text_resource_reads_as_its_exact_text(resource_server, transport):
    async with session_to(resource_server, transport) as (session, _):
        result = await session.read_resource("test://static-text")
    assert dump(result.contents) == [{"uri": "test://static-text", "mimeType": "text/plain",
                                      "text": "This is the content of the static text resource."}]


async def test_a_binary_resource_reads_as_an_exact_base64_blob(resource_server, transport):
    async with session_to(resource_server, transport) as (session, _):
        result = await session.read_resource("test://static-binary")
    assert dump(result.contents) == [{"uri": "test://static-binary", "mimeType": "image/png",
                                      "blob": b64(RED_PIXEL_PNG)}]


@pytest.mark.parametrize("item_id", ["42", "abc-7", "a%20b"])
async def test_a_template_substitutes_the_id_from_the_uri(resource_server, transport, item_id):
    uri = f"test://template/{item_id}/data"
    shown = item_id.replace("%20", " ")
    async with session_to(resource_server, transport) as (session, _):
        result = await session.read_resource(uri)
    assert dump(result.contents) == [{
        "uri": uri, "mimeType": "application/json",
        "text": f'{{"id":"{shown}","templateTest":true,"data":"Data for ID: {shown}"}}',
    }]


async def test_server_settings_resource_summarises_the_settings_without_paths(resource_server, transport, files):
    root, _ = files
    async with session_to(resource_server, transport) as (session, _):
        result = await session.read_resource("config://server")
    (content,) = result.contents
    assert content.mime_type == "application/json"
    summary = json.loads(content.text)
    assert set(summary) == {"keepalive_s", "session_ttl_s", "max_body_bytes", "page_size", "workers", "session_store"}
    assert summary["page_size"] == 2
    assert summary["workers"] == 1
    assert summary["session_store"] == "memory"
    assert str(root) not in content.text


async def test_an_unknown_uri_is_resource_not_found_with_the_uri_in_data(resource_server, transport):
    async with session_to(resource_server, transport) as (session, _):
        error = await rpc_error(session.read_resource, "test://no-such-resource")
        await session.send_ping()
    assert error.code == -32002
    assert error.data == {"uri": "test://no-such-resource"}


# the file:// template
async def test_a_text_file_inside_the_root_is_readable(resource_server, transport, files):
    root, _ = files
    uri = f"file://{root}/notes.txt"
    async with session_to(resource_server, transport) as (session, _):
        result = await session.read_resource(uri)
        nested = await session.read_resource(f"file://{root}/docs/guide.md")
    assert dump(result.contents) == [{"uri": uri, "mimeType": "text/plain", "text": "hello from the files root\n"}]
    assert nested.contents[0].text == "# Guide\n"


async def test_a_binary_file_inside_the_root_reads_as_a_blob(resource_server, transport, files):
    root, _ = files
    uri = f"file://{root}/data.bin"
    async with session_to(resource_server, transport) as (session, _):
        result = await session.read_resource(uri)
    assert dump(result.contents) == [{"uri": uri, "mimeType": "application/octet-stream", "blob": b64(BINARY)}]


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("{root}/../{outside}/secret.txt", "'..' is not allowed"),
        ("{root}/docs/../../{outside}/secret.txt", "'..' is not allowed"),
        ("{outside_path}/secret.txt", "outside MCP_FILES_ROOT"),
        ("/etc/passwd", "outside MCP_FILES_ROOT"),
        ("{root}/escape.txt", "outside MCP_FILES_ROOT"),
    ],
    ids=["dot-dot", "nested-dot-dot", "absolute-elsewhere", "etc-passwd", "symlink-out"],
)
async def test_file_uris_that_escape_the_root_are_refused(resource_server, transport, files, path, reason):
    root, outside = files
    uri = "file://" + path.format(root=root, outside=outside.name, outside_path=outside)
    async with session_to(resource_server, transport) as (session, _):
        error = await rpc_error(session.read_resource, uri)
    assert error.code == -32602
    assert reason in error.message
    assert error.data == {"uri": uri}
    # Refusals never echo what lies outside.
    assert "outside the root" not in json.dumps(error.data) + error.message


async def test_a_missing_file_inside_the_root_is_resource_not_found(resource_server, transport, files):
    root, _ = files
    uri = f"file://{root}/missing.txt"
    async with session_to(resource_server, transport) as (session, _):
        error = await rpc_error(session.read_resource, uri)
    assert error.code == -32002
    assert error.data == {"uri": uri}


# subscriptions
async def test_updates_reach_a_subscribed_uri_and_not_an_unsubscribed_one(resource_server, transport):
    async with session_to(resource_server, transport) as (session, recorder):
        await session.subscribe_resource(WATCHED)
        await session.call_tool("touch_resource", {"uri": NOT_WATCHED})
        touched = await session.call_tool("touch_resource", {"uri": WATCHED})
        # Broadcasts reach the stream in order: once WATCHED's update is in, NOT_WATCHED's would be too.
        await wait_until_async(lambda: recorder.of("notifications/resources/updated"), "the update for the watched uri")
    assert touched.content[0].text == f"touched {WATCHED}"
    assert recorder.of("notifications/resources/updated") == [{"uri": WATCHED}]


async def test_after_unsubscribe_no_more_updates_arrive(resource_server, transport):
    async with session_to(resource_server, transport) as (session, recorder):
        await session.subscribe_resource(WATCHED)
        await session.subscribe_resource(SENTINEL)
        await session.call_tool("touch_resource", {"uri": WATCHED})
        await wait_until_async(lambda: recorder.of("notifications/resources/updated"), "the first update")
        await session.unsubscribe_resource(WATCHED)
        await session.call_tool("touch_resource", {"uri": WATCHED})
        await session.call_tool("touch_resource", {"uri": SENTINEL})
        await wait_until_async(lambda: len(recorder.of("notifications/resources/updated")) >= 2, "the sentinel update")
    assert recorder.of("notifications/resources/updated") == [{"uri": WATCHED}, {"uri": SENTINEL}]


async def test_updates_reach_only_the_sessions_that_subscribed(resource_server, transport):
    async with session_to(resource_server, transport) as (watcher, watching):
        async with session_to(resource_server, transport) as (bystander, bystanding):
            await watcher.subscribe_resource(WATCHED)
            await bystander.subscribe_resource(SENTINEL)
            await bystander.call_tool("touch_resource", {"uri": WATCHED})
            await bystander.call_tool("touch_resource", {"uri": SENTINEL})
            await wait_until_async(lambda: watching.of("notifications/resources/updated"), "the watcher's update")
            await wait_until_async(lambda: bystanding.of("notifications/resources/updated"), "the bystander's update")
    assert watching.of("notifications/resources/updated") == [{"uri": WATCHED}]
    assert bystanding.of("notifications/resources/updated") == [{"uri": SENTINEL}]


async def test_subscribing_to_a_template_uri_works_and_to_an_unknown_uri_is_not_found(resource_server, transport):
    uri = "test://template/7/data"
    async with session_to(resource_server, transport) as (session, recorder):
        await session.subscribe_resource(uri)
        with pytest.raises(MCPError) as failure:
            await session.subscribe_resource("test://nothing-here")
        await session.call_tool("touch_resource", {"uri": uri})
        await wait_until_async(lambda: recorder.of("notifications/resources/updated"), "the template uri's update")
    assert failure.value.error.code == -32002
    assert failure.value.error.data == {"uri": "test://nothing-here"}
    assert recorder.of("notifications/resources/updated") == [{"uri": uri}]


# completion of template variables
@pytest.mark.parametrize(("typed", "values"), [("", ["123", "456"]), ("4", ["456"]), ("9", [])])
async def test_template_ids_complete_from_what_was_typed(resource_server, transport, typed, values):
    ref = types.ResourceTemplateReference(uri="test://template/{id}/data")
    async with session_to(resource_server, transport) as (session, _):
        result = await session.complete(ref, {"name": "id", "value": typed})
    assert dump(result.completion) == {"values": values, "total": len(values), "hasMore": False}


async def test_file_paths_complete_to_files_under_the_root(resource_server, transport, files):
    root, _ = files
    ref = types.ResourceTemplateReference(uri="file://{+path}")
    async with session_to(resource_server, transport) as (session, _):
        everything = await session.complete(ref, {"name": "path", "value": str(root) + "/"})
        docs = await session.complete(ref, {"name": "path", "value": f"{root}/do"})
    # escape.txt points outside the root: reading it is refused, so it is not suggested either.
    assert set(everything.completion.values) == {f"{root}/notes.txt", f"{root}/data.bin", f"{root}/docs/guide.md"}
    assert docs.completion.values == [f"{root}/docs/guide.md"]

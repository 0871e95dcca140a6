"""resources/*: list, templates, read (text, blob, templates), errors, subscriptions and their notifications."""

from __future__ import annotations

import base64

import pytest

from flask_mcp_gevent.encoding import loads
from mcp_tools import Registry, ResourceNotFound, ToolError, resource, resource_template
from tests.conformance.fixtures import RED_PIXEL_PNG

SECRET = "secret-detail /srv/app/credentials.py line 42"


@resource("test://refusing")
def refusing() -> str:
    """A reader that refuses with a message meant for the client."""
    raise ToolError("not today")


@resource("test://exploding")
def exploding() -> str:
    """A reader that fails unexpectedly."""
    raise RuntimeError(SECRET)


@resource_template("test://rows/{row}")
def rows(row: str) -> str:
    """Rows 1 to 3 exist; any other is not found."""
    if row not in {"1", "2", "3"}:
        raise ResourceNotFound(row)
    return f"row {row}"


@resource("test://several")
def several() -> list:
    """A reader that returns its contents entries itself."""
    return [{"text": "one", "mimeType": "text/plain"}, {"uri": "test://several#2", "blob": "AAE="}]


@pytest.fixture
def registry() -> Registry:
    """The shipped tools and resources, the conformance fixtures, and this module's readers."""
    registry = Registry.discover(plugins=["tests.conformance.fixtures"])
    for fn in (refusing, exploding, rows, several):
        registry.add_function(fn)
    return registry


def read(rpc, uri, request_id=3):
    """The response to resources/read."""
    return rpc.request("resources/read", {"uri": uri}, request_id=request_id)


def drain(subscription) -> list[dict]:
    """Everything queued on a store subscription right now, as messages."""
    messages = []
    while (event := subscription.get(timeout=0)) is not None:
        messages.append(loads(event[1]))
    return messages


# listing
def test_resources_list_describes_each_fixed_resource(make_rpc, server):
    result = make_rpc("2025-06-18").request("resources/list")["result"]
    assert [r["uri"] for r in result["resources"]] == list(server.registry.resources)
    assert "nextCursor" not in result
    by_uri = {r["uri"]: r for r in result["resources"]}
    assert by_uri["test://static-binary"] == {
        "uri": "test://static-binary", "name": "static_binary", "description": "A fixed binary resource (a PNG).",
        "mimeType": "image/png",
    }
    assert by_uri["config://server"]["name"] == "server_settings"


def test_templates_list_describes_each_template(make_rpc):
    result = make_rpc("2025-06-18").request("resources/templates/list")["result"]
    assert result["resourceTemplates"][:2] == [
        {"uriTemplate": "file://{+path}", "name": "files",
         "description": "A file under MCP_FILES_ROOT, by absolute path."},
        {"uriTemplate": "test://template/{id}/data", "name": "template_data",
         "description": "Data for an id, substituted from the URI.", "mimeType": "application/json"},
    ]
    assert [t["uriTemplate"] for t in result["resourceTemplates"]] == [
        "file://{+path}", "test://template/{id}/data", "test://rows/{row}",
    ]


# reading
def test_a_text_resource_reads_as_text_with_its_mime_type(make_rpc):
    response = read(make_rpc("2025-06-18"), "test://static-text")
    assert response == {"jsonrpc": "2.0", "id": 3, "result": {"contents": [{
        "uri": "test://static-text", "mimeType": "text/plain",
        "text": "This is the content of the static text resource.",
    }]}}


def test_a_binary_resource_reads_as_a_base64_blob(make_rpc):
    (content,) = read(make_rpc("2025-06-18"), "test://static-binary")["result"]["contents"]
    assert content == {"uri": "test://static-binary", "mimeType": "image/png",
                       "blob": base64.b64encode(RED_PIXEL_PNG).decode()}


def test_a_template_resolves_its_variable_from_the_uri(make_rpc):
    (content,) = read(make_rpc("2025-06-18"), "test://template/abc/data")["result"]["contents"]
    assert content == {"uri": "test://template/abc/data", "mimeType": "application/json",
                       "text": '{"id":"abc","templateTest":true,"data":"Data for ID: abc"}'}


def test_a_template_variable_is_percent_decoded_and_one_segment_only(make_rpc):
    rpc = make_rpc("2025-06-18")
    (content,) = read(rpc, "test://template/a%2Fb/data")["result"]["contents"]
    assert '"id":"a/b"' in content["text"]
    # {id} matches one segment: a literal slash makes the URI match no template.
    assert read(rpc, "test://template/a/b/data")["error"]["code"] == -32002


def test_a_reader_may_return_its_own_contents_entries(make_rpc):
    contents = read(make_rpc("2025-06-18"), "test://several")["result"]["contents"]
    assert contents == [
        {"uri": "test://several", "text": "one", "mimeType": "text/plain"},
        {"uri": "test://several#2", "blob": "AAE="},
    ]


# errors
@pytest.mark.parametrize("uri", ["test://nothing", "config://server/", "TEST://static-text", "test://rows/9"])
def test_an_unknown_uri_is_resource_not_found_with_the_uri_in_data(make_rpc, uri):
    response = read(make_rpc("2025-06-18"), uri)
    assert response["error"] == {"code": -32002, "message": f"Resource not found: {uri}", "data": {"uri": uri}}
    assert response["id"] == 3


@pytest.mark.parametrize("uri", [5, "", None, ["test://static-text"], {"uri": "test://static-text"}])
def test_a_uri_that_is_not_a_non_empty_string_is_invalid_params(make_rpc, uri):
    response = read(make_rpc("2025-06-18"), uri)
    assert response["error"]["code"] == -32602
    assert "uri" in response["error"]["message"]


def test_a_read_without_uri_is_invalid_params(make_rpc):
    assert make_rpc("2025-06-18").request("resources/read", {})["error"]["code"] == -32602


def test_a_reader_refusal_is_invalid_params_with_its_message(make_rpc):
    response = read(make_rpc("2025-06-18"), "test://refusing")
    assert response["error"] == {"code": -32602, "message": "not today", "data": {"uri": "test://refusing"}}


def test_a_failing_reader_is_internal_error_without_detail(make_rpc, mcp_log):
    response = read(make_rpc("2025-06-18"), "test://exploding")
    error = response["error"]
    assert error["code"] == -32603
    assert error["data"]["uri"] == "test://exploding"
    assert SECRET not in str(response)
    # The detail goes to the log, under the correlation id the client got.
    assert error["data"]["correlationId"] in mcp_log.text
    assert SECRET in mcp_log.text


def test_resources_are_not_read_before_initialize(rpc):
    response = read(rpc, "test://static-text")
    assert response["error"]["code"] == -32600


# subscriptions
def test_subscribe_and_unsubscribe_answer_empty_and_track_the_uri(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert rpc.request("resources/subscribe", {"uri": "test://watched-resource"}) == {
        "jsonrpc": "2.0", "id": 1, "result": {}}
    assert rpc.request("resources/subscribe", {"uri": "test://watched-resource"})["result"] == {}
    assert rpc.session.subscriptions == ["test://watched-resource"]
    assert rpc.request("resources/unsubscribe", {"uri": "test://watched-resource"})["result"] == {}
    assert rpc.session.subscriptions == []
    # Unsubscribing from something never subscribed is harmless.
    assert rpc.request("resources/unsubscribe", {"uri": "test://static-text"})["result"] == {}


def test_subscribing_to_a_template_uri_is_allowed(make_rpc):
    rpc = make_rpc("2025-06-18")
    assert rpc.request("resources/subscribe", {"uri": "test://template/1/data"})["result"] == {}
    assert rpc.session.subscriptions == ["test://template/1/data"]


def test_subscribing_to_an_unknown_uri_is_resource_not_found(make_rpc):
    rpc = make_rpc("2025-06-18")
    response = rpc.request("resources/subscribe", {"uri": "test://nothing"})
    assert response["error"] == {"code": -32002, "message": "Resource not found: test://nothing",
                                 "data": {"uri": "test://nothing"}}
    assert rpc.session.subscriptions == []


@pytest.mark.parametrize("method", ["resources/subscribe", "resources/unsubscribe"])
@pytest.mark.parametrize("uri", [7, None, ["x"]])
def test_subscribe_and_unsubscribe_need_a_string_uri(make_rpc, method, uri):
    assert make_rpc("2025-06-18").request(method, {"uri": uri})["error"]["code"] == -32602


def test_resource_updated_reaches_only_subscribed_sessions(server, make_rpc):
    watcher, bystander = make_rpc("2025-06-18"), make_rpc("2025-06-18")
    watcher.request("resources/subscribe", {"uri": "test://watched-resource"})
    bystander.request("resources/subscribe", {"uri": "test://static-text"})
    watching = server.store.events.subscribe(watcher.session.id)
    bystanding = server.store.events.subscribe(bystander.session.id)
    server.resource_updated("test://watched-resource")
    assert drain(watching) == [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                "params": {"uri": "test://watched-resource"}}]
    assert drain(bystanding) == []


def test_no_update_arrives_after_unsubscribe(server, make_rpc):
    rpc = make_rpc("2025-06-18")
    rpc.request("resources/subscribe", {"uri": "test://watched-resource"})
    rpc.request("resources/unsubscribe", {"uri": "test://watched-resource"})
    stream = server.store.events.subscribe(rpc.session.id)
    server.resource_updated("test://watched-resource")
    assert drain(stream) == []


def test_resource_list_changes_reach_every_initialized_session_but_not_uninitialized_ones(server, make_rpc):
    ready, fresh = make_rpc("2025-06-18"), make_rpc()
    ready_stream = server.store.events.subscribe(ready.session.id)
    fresh_stream = server.store.events.subscribe(fresh.session.id)

    @resource("test://later")
    def later() -> str:
        """Added while the server runs."""
        return "later"

    server.registry.add_function(later)
    server.registry.remove("resource template", "test://rows/{row}")
    assert drain(ready_stream) == [{"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}] * 2
    assert drain(fresh_stream) == []
    assert read(ready, "test://later")["result"]["contents"][0]["text"] == "later"
    assert read(ready, "test://rows/1")["error"]["code"] == -32002

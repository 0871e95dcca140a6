"""Errors answered before dispatch carry the request's id whenever the body could be read, in both eras."""

from __future__ import annotations

import secrets

import pytest

from tests.e2e.raw_clients import BOTH, StreamableSession, client, request
from tests.e2e.stateless_client import STATELESS_VERSION, stateless_headers, stateless_request

pytestmark = pytest.mark.e2e


@pytest.fixture
def http():
    """An httpx client with bounded reads."""
    with client() as instance:
        yield instance


def refusal(response, status, request_id):
    """Check status and id; return the JSON-RPC error."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["id"] == request_id, body
    return body["error"]


def test_unknown_streamable_session_is_404_with_the_id(server, http):
    headers = {"Accept": BOTH, "Mcp-Session-Id": secrets.token_hex(16)}
    refusal(http.post(server.url, json=request("tools/list", request_id="gone-1"), headers=headers), 404, "gone-1")


def test_malformed_streamable_session_is_400_with_the_id(server, http):
    headers = {"Accept": BOTH, "Mcp-Session-Id": "not a session"}
    refusal(http.post(server.url, json=request("tools/list", request_id=11), headers=headers), 400, 11)


def test_foreign_streamable_session_is_404_with_the_id(server, http):
    headers = {"Accept": BOTH, "Mcp-Session-Id": "not-a-session"}
    refusal(http.post(server.url, json=request("tools/list", request_id=16), headers=headers), 404, 16)


def test_missing_session_header_is_400_with_the_id(server, http):
    error = refusal(http.post(server.url, json=request("tools/list", request_id=12), headers={"Accept": BOTH}),
                    400, 12)
    assert "Mcp-Session-Id" in error["message"]


def test_unknown_legacy_session_is_404_with_the_id(server, http):
    response = http.post(server.url, params={"session_id": secrets.token_hex(16)},
                         json=request("tools/list", request_id=13))
    refusal(response, 404, 13)


def test_bad_version_header_on_a_session_is_400_with_the_id(server, http):
    session = StreamableSession(http, server.url)
    response = session.post(request("tools/list", request_id=14), headers={"MCP-Protocol-Version": "1999-01-01"})
    assert "MCP-Protocol-Version" in refusal(response, 400, 14)["message"]
    session.delete()


def test_unacceptable_accept_is_406_with_the_id(server, http):
    refusal(http.post(server.url, json=request("initialize", request_id=15), headers={"Accept": "text/html"}),
            406, 15)


def test_bad_envelope_is_400_with_the_id_on_the_legacy_wire(server, http):
    message = {"jsonrpc": "1.0", "id": 16, "method": "tools/list"}
    session = StreamableSession(http, server.url)
    refusal(session.post(message), 400, 16)
    session.delete()


def test_bad_envelope_is_400_with_the_id_on_the_stateless_wire(server, http):
    message = {**stateless_request("tools/list"), "jsonrpc": "1.0", "id": 17}
    refusal(http.post(server.url, json=message, headers=stateless_headers(message)), 400, 17)


def test_stateless_unacceptable_accept_is_406_with_the_id(server, http):
    message = stateless_request("tools/list", request_id=18)
    refusal(http.post(server.url, json=message, headers=stateless_headers(message, Accept="application/json")),
            406, 18)


def test_stateless_refusals_name_the_id(server, http):
    message = stateless_request("ping", request_id="p-19")
    response = http.post(server.url, json=message, headers=stateless_headers(message))
    assert refusal(response, 404, "p-19")["code"] == -32601


def test_stateless_version_mismatch_names_the_id(server, http):
    message = stateless_request("tools/list", request_id=20)
    response = http.post(server.url, json=message, headers=stateless_headers(message, **{"MCP-Protocol-Version": "v9"}))
    assert refusal(response, 400, 20)["code"] == -32020
    assert message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == STATELESS_VERSION

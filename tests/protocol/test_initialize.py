"""initialize: version negotiation, what the server announces, and that it happens once."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.session import LATEST, SUPPORTED

INIT = (
    '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": %s, '
    '"capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}'
)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_echoes_each_supported_version(rpc, version):
    response = rpc.one(INIT % f'"{version}"')
    assert response["id"] == 1
    assert response["result"]["protocolVersion"] == version
    assert rpc.session.protocol_version == version


def test_all_four_versions_are_supported_and_latest_is_newest():
    assert SUPPORTED == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
    assert LATEST == "2025-11-25"


@pytest.mark.parametrize("requested", ['"1999-01-01"', '"2099-12-31"', '"latest"', "5", "null"])
def test_initialize_answers_unknown_version_with_latest(rpc, requested):
    response = rpc.one(INIT % requested)
    assert response["result"]["protocolVersion"] == LATEST
    assert rpc.session.protocol_version == LATEST


def test_initialize_announces_server_info_capabilities_and_instructions(rpc, settings):
    result = rpc.one(INIT % '"2025-06-18"')["result"]
    assert result["serverInfo"]["name"] == settings.server_name
    assert isinstance(result["serverInfo"]["version"], str) and result["serverInfo"]["version"]
    assert isinstance(result["capabilities"], dict)
    assert "tools" in result["capabilities"]
    assert result["instructions"].startswith("Tools: add (")


def test_initialize_remembers_client_capabilities_and_info(rpc):
    rpc.one(
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
        '"capabilities": {"sampling": {}}, "clientInfo": {"name": "inspector", "version": "9"}}}'
    )
    assert rpc.session.client_capabilities == {"sampling": {}}
    assert rpc.session.client_info == {"name": "inspector", "version": "9"}


def test_initialize_twice_is_an_error_and_keeps_the_first_version(rpc):
    rpc.one(INIT % '"2025-03-26"')
    response = rpc.one(INIT.replace('"id": 1', '"id": 2') % '"2025-06-18"')
    assert response["id"] == 2
    assert response["error"]["code"] == -32600
    assert "already initialized" in response["error"]["message"]
    assert rpc.session.protocol_version == "2025-03-26"


def test_initialize_without_protocol_version_is_invalid_params(rpc):
    response = rpc.one('{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}')
    assert response["error"]["code"] == -32602
    assert not rpc.session.negotiated


def test_initialize_with_unknown_extra_params_still_works(rpc):
    response = rpc.one(
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", '
        '"params": {"protocolVersion": "2025-11-25", "capabilities": {}, "somethingNew": {"x": 1}}}'
    )
    assert response["result"]["protocolVersion"] == "2025-11-25"


def test_sessions_negotiate_independently(make_rpc):
    old, new = make_rpc("2024-11-05"), make_rpc("2025-11-25")
    assert old.session.protocol_version == "2024-11-05"
    assert new.session.protocol_version == "2025-11-25"

"""Which wire a POST to /mcp takes (web/pipeline.is_stateless, for the routes and the hot path alike)."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.stateless import metadata
from flask_mcp_gevent.stateless.metadata import HANDSHAKE_VERSIONS, Era, http_era
from flask_mcp_gevent.web.pipeline import is_stateless

STATELESS_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "echo", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_a_post_naming_a_handshake_version_is_streamable_without_running_the_era_rules(monkeypatch, version):
    environ = {"HTTP_MCP_PROTOCOL_VERSION": version, "HTTP_MCP_SESSION_ID": "a" * 32}
    # The rules say the same (the header wins over _meta); a session's every later request skips them.
    assert http_era("POST", {"MCP-Protocol-Version": version}, STATELESS_CALL) is Era.SESSION

    def era_rules(*_):
        raise AssertionError("the era rules ran for a handshake version header")

    monkeypatch.setattr(metadata, "http_era", era_rules)
    assert is_stateless(environ, parse_body(dumps(STATELESS_CALL))) is False


def test_a_post_naming_2026_07_28_is_stateless():
    environ = {"HTTP_MCP_PROTOCOL_VERSION": "2026-07-28"}
    assert is_stateless(environ, parse_body(dumps(STATELESS_CALL))) is True

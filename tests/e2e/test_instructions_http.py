"""The instructions a real server sends name every tool it serves, a plugin's too, on both eras."""

from __future__ import annotations

import pytest

from tests.e2e.raw_clients import StreamableSession, client
from tests.e2e.server_process import ServerProcess
from tests.e2e.stateless_client import post, stateless_request

pytestmark = pytest.mark.e2e

# ask_twice lives in the plugin; the others ship in mcp_tools/.
NAMED = ("ask_twice (", "add (", "count_down (", "echo (", "get_time (")


@pytest.fixture(scope="module")
def plugin_server():
    """A gunicorn loading one plugin module beside mcp_tools/."""
    with ServerProcess(env={"MCP_PLUGINS": "tests.e2e.plugins.two_question_tools"}) as process:
        yield process


def test_initialize_and_discover_name_the_plugins_tool_with_the_shipped_ones(plugin_server):
    with client() as http:
        initialized = StreamableSession(http, plugin_server.url, version="2025-11-25").initialize_result
        discovered = post(http, plugin_server.url, stateless_request("server/discover")).json()["result"]
    for instructions in (initialized["instructions"], discovered["instructions"]):
        assert all(name in instructions for name in NAMED), instructions

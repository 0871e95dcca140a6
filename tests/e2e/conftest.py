"""End-to-end fixtures: a real gunicorn with the gevent worker on a free loopback port."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.installed_wheel import build_wheel
from tests.e2e.sdk_sessions import TRANSPORTS
from tests.e2e.server_process import ServerProcess


@pytest.fixture(scope="session")
def server():
    """One default server (in-memory store, one worker) shared by the e2e tests that don't change settings."""
    with ServerProcess() as process:
        yield process


# The e2e plugin tools: sleep_ms (slow calls), log_messages (stream traffic), print_to_stdout (stdio hygiene).
E2E_PLUGINS = "tests.e2e.plugins.slow_tools,tests.e2e.plugins.notifying_tools,tests.e2e.plugins.noisy_tools"


@pytest.fixture(scope="session")
def tuned_server():
    """A server with the e2e plugin tools, a 0.5 s keepalive and a 4 KiB body limit."""
    env = {"MCP_PLUGINS": E2E_PLUGINS, "MCP_KEEPALIVE_S": "0.5", "MCP_MAX_BODY_BYTES": "4096"}
    with ServerProcess(env=env) as process:
        yield process


SHORT_SESSION_TTL_S = 1.0


@pytest.fixture(scope="session")
def short_ttl_server():
    """A server whose idle sessions expire after SHORT_SESSION_TTL_S, with a keepalive that notices dead streams."""
    env = {"MCP_SESSION_TTL_S": str(SHORT_SESSION_TTL_S), "MCP_KEEPALIVE_S": "0.3"}
    with ServerProcess(env=env) as process:
        yield process


@pytest.fixture(scope="module")
def anyio_backend():
    """The SDK client runs on asyncio."""
    return "asyncio"


@pytest.fixture(params=TRANSPORTS)
def transport(request):
    """Each SDK test that takes it runs once over legacy SSE and once over Streamable HTTP."""
    return request.param


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel `pip wheel` builds from the checkout (once for the tests that install it)."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))

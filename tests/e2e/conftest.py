"""End-to-end fixtures: a real gunicorn with the gevent worker on a free loopback port."""

from __future__ import annotations

import pytest

from tests.e2e.server_process import ServerProcess


@pytest.fixture(scope="session")
def server():
    """One default server (in-memory hub, one worker) shared by the e2e tests that don't change settings."""
    with ServerProcess() as process:
        yield process

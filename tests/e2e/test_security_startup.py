"""Startup refusal: gunicorn bound beyond loopback without authentication exits before opening a socket.

The exposed address is 192.0.2.1 (TEST-NET-1, never assigned to a real host): the
check must refuse it before any bind is tried, and if the check were broken the bind
would fail with a different message, so nothing ever listens off loopback. That consent
(MCP_ALLOW_UNAUTHENTICATED=1) or authentication lets the check pass is a unit test
(test_auth_settings), since passing it here would mean trying the bind.
"""

from __future__ import annotations

import json
import os
import subprocess

import httpx
import pytest

from flask_mcp_gevent.auth.api_keys import hash_key, new_key
from tests.e2e.server_process import GUNICORN, ROOT, ServerProcess, free_port

pytestmark = pytest.mark.e2e

EXPOSED = "192.0.2.1"


def run_gunicorn(*binds: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run gunicorn with the given --bind addresses and wait (bounded) for it to exit."""
    args = [GUNICORN, "-c", "gunicorn.conf.py"]
    for bind in binds:
        args += ["--bind", bind]
    return subprocess.run([*args, "wsgi:app"], cwd=ROOT, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=60)


def test_an_exposed_bind_without_authentication_is_refused_at_startup():
    finished = run_gunicorn(f"127.0.0.1:{free_port()}", f"{EXPOSED}:{free_port()}")
    assert finished.returncode != 0
    assert "Refusing to listen on 192.0.2.1" in finished.stderr
    assert "MCP_ALLOW_UNAUTHENTICATED=1" in finished.stderr
    assert "Listening at" not in finished.stderr  # refused before any socket was opened


def test_mcp_bind_is_checked_too():
    finished = run_gunicorn(env={"MCP_BIND": f"{EXPOSED}:{free_port()}"})
    assert finished.returncode != 0
    assert "MCP_ALLOW_UNAUTHENTICATED=1" in finished.stderr


def test_a_loopback_bind_with_authentication_serves(tmp_path):
    key = new_key()
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps({hash_key(key): {"principal": "alice", "tools": ["*"]}}))
    with ServerProcess(env={"MCP_API_KEYS_FILE": str(keys_file)}) as server:
        assert httpx.get(server.base_url + "/healthz", timeout=15).status_code == 200
        assert httpx.post(server.url, json={}, timeout=15).status_code == 401

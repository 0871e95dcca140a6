"""Another principal's probes of a session, on a real gunicorn with API keys: 404, and the session expires on time.

The session is compared with the prober before anything touches it, so probing a
victim's session id (POST, GET, DELETE, on either transport's path) neither reveals
it nor refreshes its idle TTL. Run on both stores.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

from flask_mcp_gevent.auth.api_keys import hash_key, new_key
from tests.e2e.raw_clients import BOTH, StreamableSession
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.e2e

ALICE_KEY = new_key()
BOB_KEY = new_key()
KEYS = {
    hash_key(ALICE_KEY): {"principal": "alice", "tools": ["*"]},
    hash_key(BOB_KEY): {"principal": "bob", "tools": ["*"]},
}
SESSION_TTL_S = 1.0
# The session must be gone well within this while the probes go on (it lives SESSION_TTL_S once left alone).
EXPIRY_DEADLINE_S = 8.0
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def http_as(key: str) -> httpx.Client:
    """An httpx client sending an API key on every request."""
    return httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=httpx.Timeout(15.0, connect=5.0))


def session_count(server: ServerProcess) -> int:
    """How many sessions the server holds (/readyz touches none)."""
    return httpx.get(server.base_url + "/readyz", timeout=10).json()["sessions"]


@pytest.mark.parametrize("backend", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
def test_a_foreign_principals_probes_get_404_and_leave_the_session_to_expire(backend, tmp_path, request):
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps(KEYS))
    env = {"MCP_API_KEYS_FILE": str(keys_file), "MCP_SESSION_TTL_S": str(SESSION_TTL_S)}
    if backend == "redis":
        redis = request.getfixturevalue("redis_server")
        redis.client().flushdb()
        env["MCP_REDIS_URL"] = redis.url
    with ServerProcess(env=env) as server, http_as(ALICE_KEY) as alice, http_as(BOB_KEY) as bob:
        victim = StreamableSession(alice, server.url)
        legacy_url = f"{server.url}?session_id={victim.session_id}"
        probes = {
            "POST": lambda: bob.post(server.url, json=PING, headers={"Accept": BOTH, **victim.headers}),
            "GET stream": lambda: bob.get(server.url, headers={"Accept": "text/event-stream", **victim.headers}),
            "DELETE": lambda: bob.delete(server.url, headers=victim.headers),
            "legacy POST": lambda: bob.post(legacy_url, json=PING),
            "legacy GET": lambda: bob.get(legacy_url, headers={"Accept": "text/event-stream"}),
        }
        assert session_count(server) == 1
        deadline = time.monotonic() + EXPIRY_DEADLINE_S
        rounds = 0
        while session_count(server) and time.monotonic() < deadline:
            for name, probe in probes.items():
                answer = probe()
                assert answer.status_code == 404, (name, answer.status_code, answer.text)
                assert "Unknown or expired session" in answer.json()["error"]["message"], name
            rounds += 1
            time.sleep(0.1)
        assert session_count(server) == 0, f"the probes kept the session alive for {EXPIRY_DEADLINE_S} s"
        assert rounds >= 2
        # Its owner finds it expired too.
        assert victim.post(PING).status_code == 404

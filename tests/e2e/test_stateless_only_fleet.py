"""MCP_SESSION_ERA=0: two workers without Redis serve the 2026-07-28 wire; the session era is refused clearly."""

from __future__ import annotations

import pytest

from tests.e2e.raw_clients import BOTH, client, initialize
from tests.e2e.server_process import ServerProcess
from tests.e2e.stateless_client import STATELESS_VERSION, post, stateless_request

pytestmark = pytest.mark.e2e
CALLS = 40


@pytest.fixture(scope="module")
def fleet():
    """Two gunicorn workers, no Redis, legacy transports off."""
    with ServerProcess(env={"MCP_SESSION_ERA": "0", "MCP_REDIS_URL": ""}, workers=2) as process:
        yield process


def test_both_workers_answer_stateless_calls(fleet):
    pids = fleet.worker_pids()
    assert len(pids) == 2
    answered = 0
    for pid in pids:
        with fleet.accepting_only(pid), client() as http:
            for _ in range(CALLS // 2):
                message = stateless_request("tools/call", {"name": "echo", "arguments": {"text": str(pid)}})
                response = post(http, fleet.url, message)
                assert response.status_code == 200, response.text
                assert response.json()["result"]["content"][0]["text"] == str(pid)
                answered += 1
    assert answered == CALLS


def test_discover_names_only_the_stateless_version(fleet):
    with client() as http:
        result = post(http, fleet.url, stateless_request("server/discover")).json()["result"]
    assert result["supportedVersions"] == [STATELESS_VERSION]


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_get_405(fleet, method):
    with client() as http:
        response = http.request(method, fleet.url, headers={"Accept": BOTH})
    assert response.status_code == 405 and response.headers["allow"] == "POST"


def test_the_legacy_sse_path_gets_405(fleet):
    with client() as http:
        assert http.get(fleet.base_url + "/sse", headers={"Accept": "text/event-stream"}).status_code == 405


def test_initialize_gets_32022_naming_the_stateless_version(fleet):
    with client() as http:
        response = http.post(fleet.url, json=initialize("2025-11-25", request_id="init-1"), headers={"Accept": BOTH})
    assert response.status_code == 400
    body = response.json()
    assert body["id"] == "init-1" and body["error"]["code"] == -32022
    assert body["error"]["data"] == {"supported": [STATELESS_VERSION], "requested": "2025-11-25"}


def test_a_session_post_gets_32022_with_its_id(fleet):
    with client() as http:
        response = http.post(fleet.url, json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
                             headers={"Accept": BOTH, "Mcp-Session-Id": "0" * 32})
    assert response.status_code == 400 and response.json()["id"] == 7
    assert response.json()["error"]["code"] == -32022


def test_two_workers_without_redis_are_still_refused_with_legacy_on():
    process = ServerProcess(env={"MCP_REDIS_URL": ""}, workers=2)
    with pytest.raises(RuntimeError, match="MCP_SESSION_ERA=0"):
        process.start(timeout=10)
    process.stop()

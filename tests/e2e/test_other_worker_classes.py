"""What docs/flask-app.md promises under a worker class other than gevent's: quick requests work, streams refused."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.e2e.server_process import ROOT, free_port
from tests.e2e.stateless_client import stateless_headers, stateless_request
from tests.support.waiting import wait_answering

pytestmark = pytest.mark.e2e

GUNICORN = str(Path(sys.executable).with_name("gunicorn"))
BOTH = "application/json, text/event-stream"


@pytest.fixture(scope="module")
def gthread_server():
    """The template's app under gunicorn's gthread worker (two threads); its base URL."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen([GUNICORN, "-c", "gunicorn.conf.py", "-k", "gthread", "--threads", "2",
                                    "-b", f"127.0.0.1:{port}", "wsgi:app"], cwd=ROOT, stdout=log,
                                   stderr=subprocess.STDOUT)
        try:
            wait_answering(f"http://127.0.0.1:{port}/healthz")
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(30)
            log.seek(0)
            assert b"Using worker: gthread" in log.read()


def test_a_stateless_http_call_is_answered(gthread_server):
    message = stateless_request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    answer = httpx.post(gthread_server + "/mcp", json=message, headers=stateless_headers(message), timeout=10)
    assert answer.status_code == 200 and answer.json()["result"]["structuredContent"] == {"result": 5}


def test_a_streamable_http_session_answers_as_json(gthread_server):
    with httpx.Client(timeout=10) as http:
        opened = http.post(gthread_server + "/mcp", headers={"Accept": BOTH}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        session = {"Accept": "application/json", "Mcp-Session-Id": opened.headers["Mcp-Session-Id"],
                   "MCP-Protocol-Version": "2025-11-25"}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert http.post(gthread_server + "/mcp", headers=session, json=initialized).status_code == 202
        called = http.post(gthread_server + "/mcp", headers=session, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}})
    assert called.json()["result"]["content"] == [{"type": "text", "text": "hi"}]


def test_a_legacy_stream_is_refused_at_once_naming_the_gevent_worker(gthread_server):
    # Its answers would come from POSTs on the other thread, and nothing they queue would wake this one:
    # refused at once rather than left open never to deliver (flask_mcp_gevent/without_gevent.py).
    refused = httpx.get(gthread_server + "/mcp", headers={"Accept": "text/event-stream"}, timeout=10)
    assert refused.status_code == 405 and refused.headers["Allow"] == "POST, DELETE"
    assert "gunicorn's gevent worker" in refused.json()["error"]["message"]
    # Both threads are still free.
    assert httpx.get(gthread_server + "/healthz", timeout=10).status_code == 200

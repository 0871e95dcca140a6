"""The console with API keys on: it asks for a key, refuses a wrong one, and shows only what the key may use.

Also: its requests meet the same Origin rule as any client's.
"""

from __future__ import annotations

import json
import os
import subprocess

import httpx
import pytest

from flask_mcp_gevent.auth.api_keys import hash_key, new_key
from tests.e2e.console.console_page import TOKEN_KEY, ConsolePage
from tests.e2e.raw_clients import READ_TIMEOUT_S, StreamableSession, request
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e

ALICE_KEY = new_key()
BOB_KEY = new_key()
KEYS = {
    hash_key(ALICE_KEY): {"principal": "alice", "tools": ["echo", "get_*"]},
    hash_key(BOB_KEY): {"principal": "bob", "tools": ["*"], "resources": ["*"], "prompts": ["*"]},
}


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory):
    """A server that takes the API keys of alice (echo and get_* only) and bob (everything)."""
    keys_file = tmp_path_factory.mktemp("console-keys") / "keys.json"
    keys_file.write_text(json.dumps(KEYS))
    with ServerProcess(env={"MCP_API_KEYS_FILE": str(keys_file)}) as process:
        yield process


@pytest.fixture
def page(browser, keyed_server):
    """The console on the keyed server, with no key stored yet."""
    return ConsolePage(browser, keyed_server.base_url).open()


def tools_for(server, key: str) -> list[str]:
    """tools/list as a plain client holding key sees it."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(headers=headers, timeout=httpx.Timeout(READ_TIMEOUT_S, connect=5.0)) as http:
        session = StreamableSession(http, server.url, version="2025-11-25")
        return [tool["name"] for tool in session.call(request("tools/list", request_id=1))["result"]["tools"]]


def test_the_page_asks_for_a_key_and_shows_nothing_before(page):
    assert page.status() == "login"
    assert page.find("#token-input").is_displayed()
    assert not page.find("#panes").is_displayed()
    assert page.listed("tool-list") == []


def test_a_wrong_key_is_refused(page):
    page.log_in("not-a-key")
    page.wait(lambda d: "Refused" in page.find("#login-error").text)
    assert "Unauthorized" in page.find("#login-error").text
    assert page.status() == "login"
    assert page.driver.execute_script(f"return sessionStorage.getItem('{TOKEN_KEY}')") is None


def test_a_restricted_principal_sees_only_its_tools(page, keyed_server):
    page.log_in(ALICE_KEY)
    page.wait(lambda d: page.status() == "connected")
    assert page.listed("tool-list") == tools_for(keyed_server, ALICE_KEY) == ["echo", "get_time"]
    assert len(tools_for(keyed_server, BOB_KEY)) > 2  # the server filtered, not the page


def test_the_key_is_kept_for_the_tab_only_and_never_shown_in_curl(page, keyed_server):
    page.log_in(BOB_KEY)
    page.wait(lambda d: page.status() == "connected")
    storage = page.driver.execute_script(
        f"return [sessionStorage.getItem('{TOKEN_KEY}'), localStorage.length, document.cookie]")
    assert storage == [BOB_KEY, 0, ""]
    page.open(forget_token=False)  # a reload in the same tab keeps the key
    assert page.status() == "connected"
    page.open_tool("add")
    page.fill("a", "2")
    page.fill("b", "3")
    page.call()
    page.result()
    exchange = page.last_exchange()
    assert BOB_KEY not in exchange["curl"] and "$MCP_TOKEN" in exchange["curl"]
    out = subprocess.run(["bash", "-c", exchange["curl"]], capture_output=True, text=True, timeout=30, check=True,
                         env={**os.environ, "MCP_TOKEN": BOB_KEY}).stdout
    data = [line[5:].strip() for line in out.splitlines() if line.startswith("data:") and line[5:].strip()]
    assert json.loads(data[-1] if data else out) == exchange["response"]


def test_the_consoles_requests_meet_the_origin_rule(browser):
    with ServerProcess(env={"MCP_ALLOWED_ORIGINS": "https://only.example"}) as server:
        page = ConsolePage(browser, server.base_url).open()
        assert page.status() == "failed"
        assert "is not allowed" in page.find("#status").text

"""The console against a server that speaks only 2026-07-28 (MCP_SESSION_ERA=0), in a real headless Chromium.

initialize is refused there with -32022, so the page speaks the stateless wire: server/discover, `_meta`
on every request, the method and name repeated in headers, elicitation as input_required rounds.
"""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from tests.e2e.console.conftest import PLUGINS
from tests.e2e.console.console_page import ConsolePage
from tests.e2e.console.test_console_browser import RECORD_PROGRESS, run_curl, severe
from tests.e2e.server_process import ServerProcess

pytestmark = pytest.mark.e2e

META = "io.modelcontextprotocol/"


@pytest.fixture(scope="module")
def stateless_server(files_root):
    """A gunicorn serving only the 2026-07-28 wire, with the console test tools."""
    env = {"MCP_PLUGINS": PLUGINS, "MCP_FILES_ROOT": str(files_root), "MCP_SESSION_ERA": "0"}
    with ServerProcess(env=env) as server:
        yield server


@pytest.fixture
def page(browser, stateless_server):
    """The console, loaded and connected over 2026-07-28, with the browser log emptied."""
    console = ConsolePage(browser, stateless_server.base_url).open()
    assert console.status() == "connected", console.find("#status").text
    console.browser_log()
    return console


def test_the_console_connects_over_2026_07_28_without_errors(browser, stateless_server):
    console = ConsolePage(browser, stateless_server.base_url)
    console.browser_log()
    console.open()
    assert console.status() == "connected"
    assert console.find("#protocol-version").text == "2026-07-28"
    assert console.find("#wire").text == "stateless HTTP (the stateless era)"
    assert console.find("#server-name").text == "flask-mcp-gevent"
    assert "count_down" in console.find("#instructions").text
    # The refused initialize is a 400 the page expected; nothing else may fail.
    assert [entry for entry in severe(console.browser_log()) if "400" not in entry["message"]] == []
    assert "add" in console.listed("tool-list")


def test_a_call_carries_meta_and_headers_and_no_session(page):
    assert page.run_tool("add", a="10", b="20").find_element(By.CSS_SELECTOR, ".content-text").text == "30"
    exchange = page.last_exchange()
    meta = exchange["request"]["params"]["_meta"]
    assert meta[META + "protocolVersion"] == "2026-07-28"
    assert meta[META + "clientCapabilities"] == {"elicitation": {}}
    assert exchange["response"]["result"]["resultType"] == "complete"
    curl = exchange["curl"]
    assert "MCP-Protocol-Version: 2026-07-28" in curl and "Mcp-Method: tools/call" in curl
    assert "Mcp-Name: add" in curl and "Mcp-Session-Id" not in curl
    # The copied command needs no session either: run alone, it gets the same answer.
    assert run_curl(curl) == exchange["response"]


def test_an_elicitation_is_an_input_required_round_answered_from_the_form(page):
    page.open_tool("greet_user")
    page.call()
    page.visible("#elicitation")
    assert page.find("#elicitation-message").text == "What is your name?"
    page.fill("name", "Ada", scope="#elicitation-form")
    page.fill("age", "36", scope="#elicitation-form")
    page.find("#elicit-accept").click()
    assert page.result().find_element(By.CSS_SELECTOR, ".content-text").text == "Hello, Ada (36)!"
    retry = page.last_exchange()["request"]["params"]
    assert isinstance(retry["requestState"], str)
    (answer,) = retry["inputResponses"].values()
    assert answer == {"action": "accept", "content": {"name": "Ada", "age": 36}}


def test_declining_an_elicitation_still_completes_the_call(page):
    page.open_tool("greet_user")
    page.call()
    page.visible("#elicitation")
    page.find("#elicit-decline").click()
    text = page.result().find_element(By.CSS_SELECTOR, ".content-text").text
    assert text == "No greeting: the user chose decline."


def test_progress_and_log_messages_arrive_on_the_calls_own_stream(page):
    page.open_tool("count_down")
    page.driver.execute_script(RECORD_PROGRESS)
    page.fill("steps", "3")
    page.fill("delay_ms", "100")
    page.call()
    bar = page.visible("#call-progress")
    page.wait(lambda d: bar.get_attribute("value") == "3")
    assert [*page.driver.execute_script("return window.progressSeen"), "3"] == [None, "1", "2", "3"]
    assert "Counted down from 3." in page.result().text
    page.wait(lambda d: "count_down" in page.find("#log-list").text)  # the request named a logLevel


def test_on_a_server_of_both_eras_the_page_speaks_2026_07_28_with_no_session(browser, console_server):
    console = ConsolePage(browser, console_server.base_url).open()
    assert console.status() == "connected"
    assert console.find("#wire").text == "stateless HTTP (the stateless era)"
    assert console.run_tool("add", a="10", b="20").find_element(By.CSS_SELECTOR, ".content-text").text == "30"
    exchange = console.last_exchange()
    assert exchange["request"]["params"]["_meta"][META + "protocolVersion"] == "2026-07-28"
    assert "Mcp-Session-Id" not in exchange["curl"]
    # No initialize was sent: server/discover told the page what the server is.
    traffic = console.driver.execute_script(
        "return [...document.querySelectorAll('#traffic-list li')].map((li) => li.textContent).join('\\n')")
    assert "server/discover" in traffic and "initialize" not in traffic


def test_the_address_pins_the_session_era_on_a_server_of_both_eras(browser, console_server):
    console = ConsolePage(browser, console_server.base_url).open("/?protocol=2025-11-25")
    assert console.status() == "connected"
    assert console.find("#protocol-version").text == "2025-11-25"
    assert console.find("#wire").text == "Streamable HTTP session (the session era)"
    assert console.run_tool("add", a="10", b="20").find_element(By.CSS_SELECTOR, ".content-text").text == "30"
    assert "Mcp-Session-Id" in console.last_exchange()["curl"]


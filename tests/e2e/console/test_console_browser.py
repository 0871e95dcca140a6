"""The console in a real headless Chromium against a real gunicorn: what a user sees and does.

The server loads the console test tools (an elicitation, every content block, a nested schema).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.e2e.console.console_page import ConsolePage
from tests.e2e.raw_clients import StreamableSession, client, request
from tests.e2e.server_process import ROOT

pytestmark = pytest.mark.e2e

# Set to a path (e.g. docs/console.png) to save the screenshot docs/console.md shows.
README_SCREENSHOT_ENV = "MCP_CONSOLE_SCREENSHOT"


def severe(entries):
    """The browser log entries that are errors (console errors, CSP violations, failed loads)."""
    return [entry for entry in entries if entry["level"] == "SEVERE"]


def listed_tools(server) -> list[str]:
    """tools/list as a plain client sees it."""
    with client() as http:
        session = StreamableSession(http, server.url, version="2025-11-25")
        return [tool["name"] for tool in session.call(request("tools/list", request_id=1))["result"]["tools"]]


def test_the_page_loads_with_no_console_errors_and_no_csp_violations(browser, console_server):
    console = ConsolePage(browser, console_server.base_url)
    console.browser_log()
    console.open()
    assert console.status() == "connected"
    assert console.find("#server-name").text == "flask-mcp-gevent"
    assert "2025-11-25" in console.find("#protocol-versions").text
    # Unpinned, the page speaks the newest era the server lists, and says which.
    assert console.find("#protocol-version").text == "2026-07-28"
    assert console.find("#wire").text == "stateless HTTP (the stateless era)"
    assert "count_down" in console.find("#instructions").text
    assert severe(console.browser_log()) == []
    # Every script is a module from this origin; nothing inline for the CSP to refuse.
    scripts = browser.execute_script("return [...document.scripts].map(s => s.src || 'inline')")
    assert scripts and all(src.startswith(console_server.base_url + "/console/") for src in scripts)


def test_a_csp_violation_would_show_in_the_browser_log(page):
    """The check above can fail: a script from another origin is refused, and the refusal is logged."""
    page.driver.execute_script(
        "const s = document.createElement('script'); s.src = 'http://192.0.2.1/x.js'; document.head.append(s)")
    page.wait(lambda d: any("Content Security Policy" in entry["message"] for entry in severe(page.browser_log())))


def test_the_tool_list_matches_tools_list(page, console_server):
    assert page.listed("tool-list") == listed_tools(console_server)


def test_the_filter_narrows_the_tool_list(page):
    page.find("#tool-filter").send_keys("count")
    page.wait(lambda d: [row.get_attribute("data-key") for row in page.find_all("#tool-list li")
                         if row.is_displayed()] == ["count_down"])


def test_a_tool_shows_its_title_description_annotations_and_schemas(page):
    page.open_tool("add")
    detail = page.find("#tool-detail")
    assert "Add two integers" in detail.text
    assert json.loads(page.find("#tool-detail .annotations").get_attribute("textContent")) == {"readOnlyHint": True}
    assert json.loads(page.find("#tool-detail .input-schema").get_attribute("textContent"))["required"] == ["a", "b"]
    assert "result" in json.loads(page.find("#tool-detail .output-schema").get_attribute("textContent"))["properties"]
    assert [label.text for label in page.find_all("#tool-form label.required")] == ["a", "b"]


def test_the_add_form_with_10_and_20_shows_30(page, console_server):
    result = page.run_tool("add", a="10", b="20")
    assert result.find_element(By.CSS_SELECTOR, ".content-text").text == "30"
    assert json.loads(result.find_element(By.CSS_SELECTOR, ".structured").text) == {"result": 30}
    exchange = page.last_exchange()
    assert exchange["request"]["params"]["arguments"] == {"a": 10, "b": 20}
    assert exchange["response"]["result"]["structuredContent"] == {"result": 30}
    if os.environ.get(README_SCREENSHOT_ENV):
        path = ROOT / os.environ[README_SCREENSHOT_ENV]
        path.parent.mkdir(parents=True, exist_ok=True)
        size = page.driver.get_window_size()
        page.driver.set_window_size(1280, 1500)  # tall enough for the result and its exchange
        page.driver.save_screenshot(str(path))
        page.driver.set_window_size(size["width"], size["height"])


def test_invalid_input_is_refused_before_sending(page):
    page.open_tool("add")
    page.fill("a", "1.5")
    page.fill("b", "twenty")
    sent_before = len(page.find_all("#traffic-list > li"))
    page.call()
    page.visible("#call-errors li")
    assert "must be a number" in page.find("#call-errors").text
    page.fill("b", "2")
    page.call()
    page.wait(lambda d: "a: must be an integer" in page.find("#call-errors").text)
    assert page.find_all("#call-output [data-role=result]") == []
    assert len(page.find_all("#traffic-list > li")) == sent_before  # nothing went to the server


def test_the_servers_is_error_is_shown_when_raw_json_sends_bad_arguments(page):
    page.open_tool("add")
    page.find("#raw-toggle").click()
    raw = page.visible("#raw-input")
    raw.clear()
    raw.send_keys('{"a": "ten", "b": 20}')
    page.call()
    result = page.result()
    assert "is-error" in result.get_attribute("class")
    assert "isError: true" in result.text
    assert "Invalid arguments for tool 'add'" in result.text
    assert page.last_exchange()["response"]["result"]["isError"] is True


# Record every value the progress bar takes, in the page, so the test sees each step however slowly it polls.
# Each mutation record carries the value it replaced (batched records would hide the current one).
RECORD_PROGRESS = """
window.progressSeen = [];
new MutationObserver((records) => records.forEach((r) => window.progressSeen.push(r.oldValue)))
  .observe(document.getElementById('call-progress'),
           {attributes: true, attributeFilter: ['data-progress'], attributeOldValue: true});
"""


def test_count_down_shows_its_progress_bar_moving(page):
    page.open_tool("count_down")
    page.driver.execute_script(RECORD_PROGRESS)
    page.fill("steps", "5")
    page.fill("delay_ms", "100")
    page.call()
    bar = page.visible("#call-progress")
    page.wait(lambda d: bar.get_attribute("value") == "5")
    replaced = page.driver.execute_script("return window.progressSeen")
    assert [*replaced, "5"] == [None, "1", "2", "3", "4", "5"]  # None: the bar had no value before the first step
    assert bar.get_attribute("max") == "5"
    assert "Counted down from 5." in page.result().text
    page.wait(lambda d: "count_down" in page.find("#log-list").text)


def test_an_elicitation_shows_its_form_and_the_answer_completes_the_call(page):
    page.open_tool("greet_user")
    page.call()
    page.visible("#elicitation")
    assert page.find("#elicitation-message").text == "What is your name?"
    page.find("#elicitation-form #elicit-accept").click()
    page.wait(lambda d: "name: is required" in page.find("#elicitation-errors").text)
    page.fill("name", "Ada", scope="#elicitation-form")
    page.fill("age", "36", scope="#elicitation-form")
    page.find("#elicit-accept").click()
    assert page.result().find_element(By.CSS_SELECTOR, ".content-text").text == "Hello, Ada (36)!"


@pytest.mark.parametrize("how, action", [("decline", "decline"), ("escape", "cancel")])
def test_declining_or_escaping_an_elicitation_still_answers_the_server(page, how, action):
    page.open_tool("greet_user")
    page.call()
    page.visible("#elicitation")
    if how == "escape":
        page.find('#elicitation-form [name="name"]').send_keys(Keys.ESCAPE)
    else:
        page.find("#elicit-decline").click()
    text = page.result().find_element(By.CSS_SELECTOR, ".content-text").text
    assert text == f"No greeting: the user chose {action}."


def test_every_content_block_is_rendered(page):
    page.open_tool("show_every_block")
    page.call()
    result = page.result()
    image = result.find_element(By.CSS_SELECTOR, ".content-image img")
    page.wait(lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image) == 1)
    audio = result.find_element(By.CSS_SELECTOR, ".content-audio audio")
    assert audio.get_attribute("src").startswith("data:audio/wav")
    assert "embedded text" in result.find_element(By.CSS_SELECTOR, ".content-resource").text
    assert json.loads(result.find_element(By.CSS_SELECTOR, ".structured").text) == {"blocks": 4}
    assert severe(page.browser_log()) == []  # data: images and audio are inside the CSP


def test_nested_objects_arrays_enums_and_booleans_have_form_fields(page):
    page.open_tool("place_order")
    page.call()
    page.wait(lambda d: "customer.name: is required" in page.find("#call-errors").text)
    page.fill("customer.name", "Ada")
    page.choose("customer.vip", "true")
    page.find('#tool-form [data-path="items"] .add-item').click()
    page.find('#tool-form [data-path="items"] .add-item').click()
    page.fill("items[0]", "tea")
    page.fill("items[1]", "cake")
    page.choose("size", "large")
    page.fill("price", "2.5")
    page.call()
    page.result()
    assert page.last_exchange()["request"]["params"]["arguments"] == {
        "customer": {"name": "Ada", "vip": True}, "items": ["tea", "cake"], "size": "large", "price": 2.5}
    assert page.last_exchange()["response"]["result"]["structuredContent"]["total"] == 5.0


def test_a_resource_read_shows_its_contents(page):
    page.tab("resources")
    page.pick("resource-list", "config://server")
    page.find("#read-button").click()
    contents = page.result("#read-output").text
    assert json.loads(contents.split("\n", 1)[1])["session_store"] == "memory"


def test_a_template_is_filled_with_a_completed_path_and_read(page, files_root):
    page.tab("resources")
    page.pick("template-list", "file://{+path}")
    page.fill("path", str(files_root / "no"), scope="#resource-detail")
    page.find('#resource-detail [data-path="path"] .suggest').click()
    notes = str(files_root / "notes.txt")
    page.wait(lambda d: page.find('#resource-detail [data-path="path"] .completions').text == notes)
    page.fill("path", notes, scope="#resource-detail")
    assert page.find("#resource-detail .uri").text == "file://" + notes
    page.find("#read-button").click()
    assert (files_root / "notes.txt").read_text() in page.result("#read-output").text


def test_a_prompt_get_shows_its_messages_and_completion_suggests(page):
    page.tab("prompts")
    page.pick("prompt-list", "code_review")
    page.fill("language", "py", scope="#prompt-detail")
    page.find('#prompt-detail [data-path="language"] .suggest').click()
    page.wait(lambda d: page.find('#prompt-detail [data-path="language"] .completions').text == "python")
    page.fill("code", "print('hi')", scope="#prompt-detail")
    page.find("#get-button").click()
    result = page.result("#prompt-output")
    assert "Please review this py code" in result.text and "print('hi')" in result.text
    assert "user" in result.find_element(By.CSS_SELECTOR, ".role-user h4").text


def run_curl(command: str) -> dict:
    """Run a copied curl command in a shell and return the JSON-RPC response it printed (JSON or SSE)."""
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30, check=True).stdout
    lines = [line[5:].strip() for line in out.splitlines() if line.startswith("data:") and line[5:].strip()]
    return json.loads(lines[-1] if lines else out)


def test_the_copied_curl_command_returns_the_same_result(page):
    page.open_tool("add")
    page.fill("a", "10")
    page.fill("b", "20")
    page.call()
    page.result()
    exchange = page.last_exchange()
    page.driver.execute_cdp_cmd("Browser.grantPermissions", {
        "origin": page.base_url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    button = page.find("#call-output .copy-curl")
    button.click()
    page.wait(lambda d: button.text == "Copied")
    copied = page.driver.execute_async_script("navigator.clipboard.readText().then(arguments[0])")
    assert copied == exchange["curl"]
    assert "Mcp-Session-Id" in copied and "Authorization" not in copied
    assert run_curl(copied) == exchange["response"]


def test_the_operations_tab_shows_sessions_streams_and_rates(page):
    page.tab("operations")
    page.wait(lambda d: page.find("#ops-sessions").text.isdigit() and int(page.find("#ops-sessions").text) >= 1)
    # The second scrape turns two samples into rates.
    page.wait(lambda d: page.find("#ops-request-rate").text.replace(".", "", 1).isdigit())
    assert "Scraped /metrics" in page.find("#ops-status").text
    assert "tools/call" in page.find("#ops-methods").text or "initialize" in page.find("#ops-methods").text


# What the shipped nginx config answers anyone but the machine itself on /metrics.
REFUSE_METRICS = """
const realFetch = window.fetch;
window.fetch = (url, options) => String(url).endsWith('/metrics')
  ? Promise.resolve(new Response('', {status: 403})) : realFetch(url, options);
"""


def test_the_operations_tab_says_so_when_metrics_are_restricted(page):
    page.driver.execute_script(REFUSE_METRICS)
    page.tab("operations")
    page.wait(lambda d: "HTTP 403" in page.find("#ops-status").text)
    assert "restricted" in page.find("#ops-status").text
    assert page.find("#ops-sessions").text == "–"

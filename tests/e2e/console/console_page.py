"""The console page as the tests use it: open it, pick things, fill forms, wait for what the user would see.

Every wait is explicit (WebDriverWait on a condition) with a generous timeout; nothing sleeps.
"""

from __future__ import annotations

import json
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

WAIT_S = 20.0
TOKEN_KEY = "mcp-console-token"


class ConsolePage:
    """One console tab in the browser."""

    def __init__(self, driver: WebDriver, base_url: str) -> None:
        self.driver = driver
        self.base_url = base_url

    def wait(self, condition, timeout: float = WAIT_S, message: str = ""):
        """Wait until condition(driver) is truthy and return it."""
        return WebDriverWait(self.driver, timeout).until(condition, message)

    def open(self, path: str = "/", forget_token: bool = True) -> ConsolePage:
        """Load the page (with a fresh sessionStorage unless told otherwise) and drop the log so far."""
        self.driver.get(self.base_url + path)
        if forget_token:
            self.driver.execute_script("sessionStorage.clear()")
            self.driver.get(self.base_url + path)
        self.wait(lambda d: self.status() in ("connected", "login", "failed"), message="the page never settled")
        return self

    def status(self) -> str | None:
        """The status line's state: connected, login or failed (None while connecting)."""
        return self.find("#status").get_attribute("data-state")

    def find(self, css: str) -> WebElement:
        """The element matching css (it must exist)."""
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> list[WebElement]:
        """Every element matching css."""
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def visible(self, css: str) -> WebElement:
        """Wait until the element matching css is visible."""
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, css)), message=f"{css} never showed")

    def browser_log(self) -> list[dict[str, Any]]:
        """The browser console entries since the last call (CSP violations show up here as SEVERE)."""
        return self.driver.get_log("browser")

    def tab(self, name: str) -> None:
        """Switch to a tab: tools, resources, prompts, traffic, operations."""
        self.find(f'#tabs button[data-tab="{name}"]').click()
        self.visible(f"#pane-{name}")

    def listed(self, list_id: str) -> list[str]:
        """The keys (names or URIs) a list shows."""
        return [row.get_attribute("data-key") for row in self.find_all(f"#{list_id} li")]

    def pick(self, list_id: str, key: str) -> None:
        """Click a list entry by its key."""
        self.find(f'#{list_id} li[data-key="{key}"] button').click()

    def open_tool(self, name: str) -> None:
        """Show a tool's detail and form."""
        self.pick("tool-list", name)
        self.visible("#call-button")

    def fill(self, field: str, value: str, scope: str = "#tool-form") -> None:
        """Type into the form field whose name is field (a path like customer.name)."""
        element = self.find(f'{scope} [name="{field}"]')
        element.clear()
        element.send_keys(value)

    def choose(self, field: str, text: str, scope: str = "#tool-form") -> None:
        """Pick an option of a select field by its visible text."""
        Select(self.find(f'{scope} select[name="{field}"]')).select_by_visible_text(text)

    def call(self) -> None:
        """Press the call button (its output is replaced by the next result)."""
        self.driver.execute_script("document.getElementById('call-output').replaceChildren()")
        self.find("#call-button").click()

    def run_tool(self, name: str, **fields: str) -> WebElement:
        """Open a tool, type each field, press call; return its result box."""
        self.open_tool(name)
        for field, value in fields.items():
            self.fill(field, value)
        self.call()
        return self.result()

    def result(self, output: str = "#call-output") -> WebElement:
        """Wait for the result box of the last call and return it."""
        return self.visible(f'{output} [data-role="result"]')

    def last_exchange(self, output: str = "#call-output") -> dict[str, Any]:
        """The request and response JSON shown for the last call."""
        box = self.find(f"{output} .exchange")
        return {
            "request": json.loads(box.find_element(By.CSS_SELECTOR, ".rpc-request").get_attribute("textContent")),
            "response": json.loads(box.find_element(By.CSS_SELECTOR, ".rpc-response").get_attribute("textContent")),
            "curl": box.find_element(By.CSS_SELECTOR, ".curl").get_attribute("textContent"),
        }

    def log_in(self, token: str) -> None:
        """Type a key into the login form and submit it."""
        self.visible("#token-input").send_keys(token)
        self.find("#login-submit").click()

"""The console against two gunicorn workers on the Redis store: the same page, the same answers.

Which worker takes each of the page's POSTs is the kernel's choice; tests/e2e/test_scale_out.py pins
answers to chosen workers. This proves the page needs nothing of a single in-memory worker.
"""

from __future__ import annotations

import pytest
from selenium.webdriver.common.by import By

from tests.e2e.console.conftest import PLUGINS
from tests.e2e.console.console_page import ConsolePage
from tests.e2e.server_process import ServerProcess
from tests.redis_server import redis_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


@pytest.fixture(scope="module")
def fleet(redis_server):  # noqa: F811
    """gunicorn with two workers sharing one Redis."""
    with ServerProcess(env={"MCP_REDIS_URL": redis_server.url, "MCP_PLUGINS": PLUGINS}, workers=2) as server:
        yield server


@pytest.fixture
def page(browser, fleet):
    """The console on the fleet, connected."""
    console = ConsolePage(browser, fleet.base_url).open()
    assert console.status() == "connected", console.find("#status").text
    return console


def test_add_elicitation_and_progress_work_on_the_redis_store(page):
    assert page.run_tool("add", a="10", b="20").find_element(By.CSS_SELECTOR, ".content-text").text == "30"

    page.open_tool("greet_user")
    page.call()
    page.visible("#elicitation")
    page.fill("name", "Grace", scope="#elicitation-form")
    page.find("#elicit-accept").click()
    assert page.result().find_element(By.CSS_SELECTOR, ".content-text").text == "Hello, Grace (age unknown)!"

    page.open_tool("count_down")
    page.fill("steps", "3")
    page.call()
    page.wait(lambda d: page.find("#call-progress").get_attribute("value") == "3")
    assert "Counted down from 3." in page.result().text

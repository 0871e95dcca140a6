"""Fixtures for the console tests: one headless Chromium per module, a screenshot of every failure.

The browser and its driver are Debian's `chromium` and `chromium-driver` (scripts/test.sh installs them);
Selenium is given both paths, so its manager never looks for, or downloads, a browser of its own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.e2e.console.console_page import ConsolePage
from tests.e2e.server_process import ROOT, ServerProcess

SCREENSHOT_DIR = Path(os.environ.get("MCP_TEST_SCREENSHOTS", ROOT / "test-artifacts" / "screenshots"))
WINDOW_SIZE = "1400,1000"
PLUGINS = "tests.e2e.plugins.console_tools"


def chromium_paths() -> tuple[str, str]:
    """The Debian chromium binary and its driver; fail (not skip) when missing, so CI cannot pass without them."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not browser or not driver:
        pytest.fail("the console tests need Debian's chromium and chromium-driver (scripts/test.sh installs them)")
    return browser, driver


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium that records the browser log (console errors, CSP violations)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = chromium_paths()
    profile = tempfile.mkdtemp(prefix="mcp-console-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--no-first-run", "--disable-extensions", "--disable-background-networking",
                     f"--window-size={WINDOW_SIZE}", f"--user-data-dir={profile}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Save what the browser showed when a test failed, so a red run shows what the user saw."""
    outcome = yield
    report = outcome.get_result()
    driver = item.funcargs.get("browser") if hasattr(item, "funcargs") else None
    if report.failed and report.when == "call" and driver is not None:
        SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOT_DIR / f"{item.name}.png".replace("/", "_")
        try:
            driver.save_screenshot(str(path))
            report.sections.append(("screenshot", str(path)))
        except Exception as exc:  # a crashed browser must not hide the test's own failure
            report.sections.append(("screenshot", f"not saved: {exc}"))


FILE_TEXT = "hello from a file"


@pytest.fixture(scope="module")
def files_root(tmp_path_factory):
    """A directory with one text file, for the file:// resource template."""
    root = tmp_path_factory.mktemp("console-files")
    (root / "notes.txt").write_text(FILE_TEXT)
    return root


@pytest.fixture(scope="module")
def console_server(files_root):
    """A gunicorn with the console test tools and a files root."""
    with ServerProcess(env={"MCP_PLUGINS": PLUGINS, "MCP_FILES_ROOT": str(files_root)}) as process:
        yield process


# The page speaks 2026-07-28 wherever the server does (test_console_stateless.py drives that); the suites that use
# this fixture pin the session era, so its Streamable HTTP session, POST streams and DELETE stay covered too.
SESSION_ERA_PAGE = "/?protocol=2025-11-25"


@pytest.fixture
def page(browser, console_server):
    """The console pinned to the session era, loaded and connected, with the browser log emptied."""
    console = ConsolePage(browser, console_server.base_url).open(SESSION_ERA_PAGE)
    assert console.status() == "connected", console.find("#status").text
    console.browser_log()
    return console

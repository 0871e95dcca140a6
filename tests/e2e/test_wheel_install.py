"""The package as a user gets it: a wheel built from the checkout, installed into a fresh venv outside it.

The wheel holds the server package and its files only (no tests, bench, mcp_tools or scripts); installed with
every extra (`[all]`), it serves a tiny host app under gunicorn's gevent worker from a directory that is not the
checkout, so nothing can be imported from the source tree by accident. tests/e2e/test_default_install.py installs it
without extras.
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.e2e.installed_wheel import DISTRIBUTION, HOST_APP, call_add, clean_environ, healthy, install_in_new_venv
from tests.e2e.server_process import ROOT, free_port
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

# The test runner the copied extension tests need in the fresh venv (requirements-dev.txt's pin).
PYTEST = "pytest==9.2.0"


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv outside the checkout with the wheel, every extra and their dependencies; its bin directory."""
    return install_in_new_venv(tmp_path_factory.mktemp("venv"), f"{wheel}[all]")


def test_the_wheel_holds_the_server_package_and_its_files_only(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    packages = {name.split("/")[0] for name in names if not name.startswith(f"{DISTRIBUTION}-")}
    assert packages == {"flask_mcp_gevent"}
    assert "flask_mcp_gevent/web/console_static/index.html" in names and "flask_mcp_gevent/py.typed" in names


def test_a_host_app_runs_from_the_installed_package_under_gunicorn(installed, tmp_path):
    (tmp_path / "host.py").write_text(HOST_APP)
    where = "import flask_mcp_gevent; print(flask_mcp_gevent.__file__)"
    imported = subprocess.run([str(installed / "python"), "-c", where],
                              capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert str(ROOT) not in imported and "site-packages" in imported
    port = free_port()
    env = clean_environ()
    server = subprocess.Popen([str(installed / "gunicorn"), "-k", "gevent", "-b", f"127.0.0.1:{port}", "host:app"],
                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: healthy(base), timeout=60, what="the installed host app answering")
        assert httpx.get(base + "/").text == "host"
        answer = call_add(base, 2, 3)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["content"] == [{"type": "text", "text": "5"}]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_extension_tests_pass_against_the_installed_wheel(installed, tmp_path):
    """tests/extension, copied out of the checkout, run by the fresh venv's Python against the installed package."""
    subprocess.run([str(installed / "python"), "-m", "pip", "install", "-q", PYTEST], check=True, timeout=300)
    copy = tmp_path / "tests"
    shutil.copytree(ROOT / "tests" / "extension", copy / "extension",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "__init__.py").write_text("")
    env = clean_environ()
    ran = subprocess.run([str(installed / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/extension"],
                         cwd=tmp_path, env={**env, "MCP_EXPECT_INSTALLED": "1"}, capture_output=True, text=True,
                         timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert " passed" in ran.stdout and "error" not in ran.stdout.splitlines()[-1]


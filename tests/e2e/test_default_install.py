"""`pip install flask-mcp-gevent` without extras: none of them comes along, a host app still serves its tools
under gunicorn's gevent worker, and a setting that needs a missing extra stops the start naming it."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import httpx
import pytest

from tests.e2e.installed_wheel import HOST_APP, call_add, clean_environ, healthy, install_in_new_venv
from tests.e2e.server_process import free_port
from tests.support.waiting import wait_until

pytestmark = pytest.mark.e2e

# The import names of every extra's distributions: redis, hiredis, PyJWT, prometheus-client, flask-limiter, limits.
EXTRA_MODULES = ("redis", "hiredis", "jwt", "prometheus_client", "flask_limiter", "limits")
FIND_MODULES = textwrap.dedent(f'''
    import importlib.util, json
    print(json.dumps([name for name in {EXTRA_MODULES!r} if importlib.util.find_spec(name) is not None]))
''')
# Each MCP(app, settings=...) that needs an extra, and the start refusal it must get.
START_REFUSALS = textwrap.dedent('''
    import json
    from flask import Flask
    from flask_mcp_gevent import MCP
    from flask_mcp_gevent.config import ConfigError

    tries = {
        "redis": {"redis_url": "redis://127.0.0.1:1/0"},
        "ratelimit": {"rate_limit": "10/minute"},
        "oauth": {"oauth_jwks_url": "https://issuer.example/jwks.json", "oauth_issuer": "https://issuer.example",
                  "oauth_audience": "https://mcp.example/mcp"},
    }
    refusals = {}
    for extra, settings in tries.items():
        try:
            MCP(Flask(__name__), settings=settings)
            refusals[extra] = None
        except ConfigError as refusal:
            refusals[extra] = str(refusal)
    print(json.dumps(refusals))
''')


@pytest.fixture(scope="module")
def bare(wheel, tmp_path_factory) -> Path:
    """A fresh venv outside the checkout with the wheel and its default dependencies only; its bin directory."""
    return install_in_new_venv(tmp_path_factory.mktemp("bare-venv"), str(wheel))


def run_python(bin_dir: Path, code: str, cwd: Path) -> str:
    """Run code with the venv's Python from cwd (not the checkout); its stdout."""
    return subprocess.run([str(bin_dir / "python"), "-c", code], capture_output=True, text=True, check=True,
                          cwd=cwd, env=clean_environ(), timeout=60).stdout


def test_the_default_install_brings_none_of_the_extras(bare, tmp_path):
    listed = json.loads(subprocess.run([str(bare / "python"), "-m", "pip", "list", "--format=json"],
                                       capture_output=True, text=True, check=True, cwd=tmp_path, timeout=60).stdout)
    found = json.loads(run_python(bare, FIND_MODULES, tmp_path))
    names = sorted(entry["name"] for entry in listed)
    assert found == [], f"{len(listed)} distributions installed ({', '.join(names)}), among them extras: {found}"


def test_a_host_app_serves_a_tool_call_under_gunicorns_gevent_worker_without_extras(bare, tmp_path):
    (tmp_path / "host.py").write_text(HOST_APP)
    port = free_port()
    # The package's own gunicorn settings (what `flask mcp serve` uses): gevent worker, metrics directory hooks.
    env = {**clean_environ(), "MCP_BIND": f"127.0.0.1:{port}"}
    server = subprocess.Popen([str(bare / "gunicorn"), "-c", "python:flask_mcp_gevent.serving.gunicorn_config",
                               "host:app"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: healthy(base) or server.poll() is not None, timeout=60,
                   what="the host app answering on the default install")
        assert server.poll() is None, server.communicate(timeout=10)[1][-3000:]
        answer = call_add(base, 2, 3)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["content"] == [{"type": "text", "text": "5"}]
        metrics = httpx.get(base + "/mcp/metrics")
        assert metrics.status_code == 404 and "flask-mcp-gevent[metrics]" in metrics.json()["reason"]
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=30)
    assert server.returncode == 0 and "Traceback" not in errors, errors[-3000:]


def test_settings_that_need_an_extra_stop_the_start_naming_it(bare, tmp_path):
    refusals = json.loads(run_python(bare, START_REFUSALS, tmp_path))
    setting = {"redis": "MCP_REDIS_URL", "ratelimit": "MCP_RATE_LIMIT", "oauth": "MCP_OAUTH_JWKS_URL"}
    assert refusals == {extra: f"{setting[extra]} needs the {extra} extra: pip install 'flask-mcp-gevent[{extra}]'"
                        for extra in setting}


def test_gunicorn_refuses_to_start_with_a_setting_whose_extra_is_missing(bare, tmp_path):
    (tmp_path / "host.py").write_text(HOST_APP)
    env = {**clean_environ(), "MCP_BIND": f"127.0.0.1:{free_port()}", "MCP_REDIS_URL": "redis://127.0.0.1:1/0"}
    refused = subprocess.run([str(bare / "gunicorn"), "-c", "python:flask_mcp_gevent.serving.gunicorn_config",
                              "host:app"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0
    assert "MCP_REDIS_URL needs the redis extra: pip install 'flask-mcp-gevent[redis]'" in refused.stderr

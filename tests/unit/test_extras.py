"""The pip extras: a setting that needs a missing one stops the start naming it; without any, the server still serves.

A module is made missing by a None in sys.modules, which makes both importlib's lookup and an import fail, as an
absent distribution does (tests/e2e/test_default_install.py checks a real install without extras).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_mcp_gevent import MCP, metrics
from flask_mcp_gevent.config import EXTRAS, ConfigError, Settings, extra_installed, require_extra

ROOT = Path(__file__).resolve().parents[2]
OAUTH = {"oauth_jwks_url": "https://issuer.example/jwks.json", "oauth_issuer": "https://issuer.example",
         "oauth_audience": "https://mcp.example/mcp"}
# Each setting that needs an extra, with what it needs besides (as MCP(settings=...) takes them).
NEEDS = [
    ("MCP_REDIS_URL", "redis", {"redis_url": "redis://127.0.0.1:1/0"}),
    ("MCP_REDIS_SENTINELS", "redis", {"redis_sentinels": ["10.0.0.1:26379"], "redis_sentinel_master": "m"}),
    ("MCP_OAUTH_JWKS_URL", "oauth", OAUTH),
    ("MCP_RATE_LIMIT", "ratelimit", {"rate_limit": "10/minute"}),
]


def as_environ(values: dict[str, Any]) -> dict[str, str]:
    """The MCP_* variables that say what values says."""
    return {f"MCP_{name.upper()}": ",".join(value) if isinstance(value, list) else value
            for name, value in values.items()}


def make_missing(monkeypatch: pytest.MonkeyPatch, extra: str) -> None:
    """Make every module of extra unimportable for the rest of the test."""
    for module in EXTRAS[extra]:
        monkeypatch.setitem(sys.modules, module, None)


def test_an_installed_extra_is_found_and_a_missing_one_is_not(monkeypatch):
    assert all(extra_installed(extra) for extra in EXTRAS)  # the dev venv has them all
    monkeypatch.setitem(sys.modules, "hiredis", None)
    assert not extra_installed("redis") and extra_installed("metrics")


def test_require_names_the_setting_and_the_pip_command(monkeypatch):
    require_extra("redis", "MCP_REDIS_URL")  # installed: nothing to say
    make_missing(monkeypatch, "redis")
    with pytest.raises(ConfigError) as refused:
        require_extra("redis", "MCP_REDIS_URL")
    assert str(refused.value) == "MCP_REDIS_URL needs the redis extra: pip install 'flask-mcp-gevent[redis]'"


@pytest.mark.parametrize(("setting", "extra", "values"), NEEDS, ids=[setting for setting, _, _ in NEEDS])
def test_a_setting_whose_extra_is_missing_stops_the_start(monkeypatch, setting, extra, values):
    Settings.from_environ(as_environ(values))  # with the extra, these settings are fine
    make_missing(monkeypatch, extra)
    refusal = rf"^{setting} needs the {extra} extra: pip install 'flask-mcp-gevent\[{extra}\]'$"
    with pytest.raises(ConfigError, match=refusal):
        Settings.from_environ(as_environ(values))
    with pytest.raises(ConfigError, match=refusal):
        MCP(Flask(__name__), settings=values)


def test_a_redis_cluster_is_refused_without_the_redis_extra(monkeypatch):
    make_missing(monkeypatch, "redis")
    with pytest.raises(ConfigError, match=r"^MCP_REDIS_URL needs the redis extra"):
        Settings.from_environ({"MCP_REDIS_CLUSTER": "1", "MCP_REDIS_URL": "redis://10.0.0.1:6379"})
    with pytest.raises(ConfigError, match=r"^MCP_REDIS_CLUSTER needs the redis extra"):
        Settings(redis_cluster=True).check_extras()


def test_settings_that_need_no_extra_start_with_every_extra_missing(monkeypatch):
    for extra in EXTRAS:
        make_missing(monkeypatch, extra)
    Settings.from_environ({"MCP_API_KEYS_FILE": "keys.json", "MCP_SESSION_ERA": "0", "MCP_WORKERS": "2"})


def test_the_extras_are_the_ones_pyproject_declares_and_all_brings_each():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["optional-dependencies"]
    assert set(declared) == {*EXTRAS, "all"}
    assert declared["all"] == [f"flask-mcp-gevent[{','.join(EXTRAS)}]"]
    default = " ".join(project["dependencies"]).lower()
    assert not any(name in default for name in ("redis", "hiredis", "pyjwt", "prometheus", "limiter", "limits"))
    assert "cryptography" in default  # requestState sealing on the 2026-07-28 wire needs it with no setting


def test_without_prometheus_client_the_instruments_count_nothing_and_metrics_answers_404(monkeypatch):
    make_missing(monkeypatch, "metrics")
    monkeypatch.setattr(metrics, "_instruments", None)
    assert isinstance(metrics.instruments(), metrics.NoInstruments)
    metrics.instruments().count_request("ping", {"result": {}}, 0.001)
    app = Flask(__name__)
    MCP(app)
    answer = app.test_client().get("/mcp/metrics")
    assert answer.status_code == 404
    assert "pip install 'flask-mcp-gevent[metrics]'" in answer.get_json()["reason"]


SERVE_WITHOUT_EXTRAS = textwrap.dedent('''
    import sys
    for module in ("redis", "hiredis", "jwt", "prometheus_client", "flask_limiter", "limits"):
        sys.modules[module] = None  # as if not installed: any import of them fails
    from flask import Flask
    from flask_mcp_gevent import MCP
    import flask_mcp_gevent.serving.gunicorn_config  # the package's gunicorn settings load too

    app = Flask(__name__)
    mcp = MCP(app)

    @mcp.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    answer = app.test_client().post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": 2, "b": 3}, "_meta": meta}},
        headers={"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "add",
                 "Accept": "application/json, text/event-stream"})
    print(answer.get_json()["result"]["content"][0]["text"])
''')


def test_the_package_serves_a_tool_call_with_no_extra_importable():
    # A fresh interpreter: this one has imported the extras already.
    ran = subprocess.run([sys.executable, "-c", SERVE_WITHOUT_EXTRAS], cwd=ROOT, capture_output=True, text=True,
                         timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip() == "5"

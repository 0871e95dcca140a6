"""The official MCP conformance suite (@modelcontextprotocol/conformance) against the real server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conformance.runner import FIXTURE_PLUGINS
from tests.e2e.server_process import ServerProcess

HERE = Path(__file__).resolve().parent
NODE = HERE / "node_modules" / ".bin" / "node"
# The 0.1.16 package itself: node_modules/.bin/conformance may name alpha.12, which installs the same command.
CLI = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.conformance,
    pytest.mark.skipif(not CLI.exists(), reason="run scripts/test.sh (npm install in tests/conformance) first"),
]


@pytest.fixture(scope="module")
def fixture_server():
    """A gunicorn server with the conformance fixtures loaded as a plugin."""
    with ServerProcess(env={"MCP_PLUGINS": FIXTURE_PLUGINS}) as process:
        yield process


@pytest.fixture(scope="module")
def default_server():
    """A gunicorn server exactly as shipped: no plugins."""
    with ServerProcess() as process:
        yield process


def run_suite(url: str, output_dir: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the conformance CLI with Node 22 and capture its output."""
    return subprocess.run(
        [str(NODE), str(CLI), "server", "--url", url, "-o", str(output_dir), *args],
        capture_output=True, text=True, timeout=600,
    )


def read_checks(output_dir: Path) -> dict[str, list[dict]]:
    """Every scenario's checks, from the JSON files the suite wrote."""
    results = {}
    for checks_file in output_dir.glob("server-*/checks.json"):
        scenario = checks_file.parent.name.removeprefix("server-").rsplit("-20", 1)[0]
        results[scenario] = json.loads(checks_file.read_text())
    return results


def test_every_active_server_scenario_passes(fixture_server, tmp_path):
    """All 30 active scenarios of 0.1.16 pass with no failures and no warnings."""
    completed = run_suite(fixture_server.url, tmp_path)
    results = read_checks(tmp_path)
    problems = {
        scenario: [f"{c['status']}: {c['name']}: {c.get('errorMessage', c['description'])}"
                   for c in checks if c["status"] in ("FAILURE", "WARNING")]
        for scenario, checks in results.items()
    }
    problems = {scenario: found for scenario, found in problems.items() if found}
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    assert len(results) == 30, sorted(results)
    assert problems == {}
    assert "Total: " in completed.stdout and " 0 failed" in completed.stdout


def test_pending_scenarios_pass_too(fixture_server, tmp_path):
    """The two pending scenarios (JSON Schema 2020-12, SSE polling with resumption) pass without warnings."""
    completed = run_suite(fixture_server.url, tmp_path, "--suite", "pending")
    checks = [c for found in read_checks(tmp_path).values() for c in found]
    statuses = {c["id"]: c["status"] for c in checks}
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert statuses.get("server-sse-disconnect-resume") == "SUCCESS", statuses
    assert statuses.get("server-sse-priming-event") == "SUCCESS", statuses
    assert all(status in ("SUCCESS", "INFO") for status in statuses.values()), statuses


@pytest.mark.parametrize("scenario", [
    "server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection",
])
def test_fixture_free_scenario_passes_on_the_default_server(default_server, tmp_path, scenario):
    """The scenarios that need no fixtures pass against the server exactly as shipped."""
    completed = run_suite(default_server.url, tmp_path, "--scenario", scenario)
    checks = [c for found in read_checks(tmp_path).values() for c in found]
    assert completed.returncode == 0, completed.stdout[-4000:]
    assert checks and all(c["status"] in ("SUCCESS", "INFO") for c in checks), checks

"""Conformance 0.2.0-alpha.12 (npm alias conformance-next) against the real server: the frozen requirement sets."""

from __future__ import annotations

import pytest

from tests.conformance.runner import CLI_NEXT, FIXTURE_PLUGINS, NODE, list_scenarios, run_requirements
from tests.e2e.server_process import ServerProcess

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.conformance,
    pytest.mark.skipif(not (CLI_NEXT.exists() and NODE.exists()),
                       reason="run scripts/test.sh (npm install in tests/conformance) first"),
]


@pytest.fixture(scope="module")
def fixture_server():
    """A gunicorn server with the conformance fixtures loaded as a plugin."""
    with ServerProcess(env={"MCP_PLUGINS": FIXTURE_PLUGINS}) as process:
        yield process


def test_the_2025_requirement_set_passes_with_no_failed_or_warned_check(fixture_server, tmp_path):
    """Every scenario alpha.12 requires (or runs unscored) for 2025-11-25 passes on the legacy wire."""
    expected = list_scenarios("2025-11-25")
    outcome = run_requirements(fixture_server.url, "2025-11-25", tmp_path)
    assert outcome.returncode == 0, outcome.stdout[-4000:] + outcome.stderr[-2000:]
    assert sorted(outcome.checks) == sorted(expected["scored"] + expected["not_scored"])
    assert outcome.failures(("FAILURE", "WARNING")) == {}
    assert " 0 failed" in outcome.stdout


def test_the_runner_lists_the_2026_requirement_set():
    """The frozen 2026-07-28 set: 37 scored server scenarios, the unscored ones beside them."""
    scenarios = list_scenarios("2026-07-28")
    assert len(scenarios["scored"]) == 37
    assert {"server-stateless", "caching", "input-required-result-tampered-state"} <= set(scenarios["scored"])
    assert {"http-header-validation", "http-custom-header-server-validation", "json-schema-2020-12"} <= set(
        scenarios["not_scored"])

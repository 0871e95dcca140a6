"""Conformance 0.2.0-alpha.12 `--requirements 2026-07-28` against a real gunicorn: the stateless wire's scenarios.

Multi round-trip requests (input-required-*, -32021) are built on their own; the checks
that need them are listed here and left out of the assertion until they land. The tasks extension is aside.
"""

from __future__ import annotations

import pytest

from tests.conformance.runner import CLI_NEXT, FIXTURE_PLUGINS, NODE, run_requirements
from tests.e2e.server_process import ServerProcess

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.conformance,
    pytest.mark.skipif(not (CLI_NEXT.exists() and NODE.exists()),
                       reason="run scripts/test.sh (npm install in tests/conformance) first"),
]

# Scenarios that need multi round-trip requests, or the tasks extension (not scored: "the tasks extension aside").
ELSEWHERE_PREFIXES = ("input-required-result-", "tasks-")
# server-stateless checks that need -32021 and input_required (multi round-trip); the listen checks count here.
ELSEWHERE_CHECKS = frozenset({
    "sep-2575-server-rejects-undeclared-capability",
    "sep-2575-missing-capability-http-400",
    "sep-2575-http-server-no-independent-requests-on-stream",
})


@pytest.fixture(scope="module")
def fixture_server():
    """A gunicorn server with the 2025 and 2026 conformance fixtures loaded as plugins."""
    with ServerProcess(env={"MCP_PLUGINS": FIXTURE_PLUGINS}) as process:
        yield process


def ours(scenario: str, check: dict) -> bool:
    """Whether a check belongs to the stateless wire itself (not to multi round-trip, listen or tasks)."""
    if scenario.startswith(ELSEWHERE_PREFIXES):
        return False
    return check.get("id", check.get("name")) not in ELSEWHERE_CHECKS


def test_the_stateless_wire_fails_and_warns_no_check_of_its_own(fixture_server, tmp_path):
    """Every scenario alpha.12 runs for 2026-07-28, scored or not, passes on the stateless wire's own checks."""
    outcome = run_requirements(fixture_server.url, "2026-07-28", tmp_path)
    assert len(outcome.checks) >= 37, outcome.stdout[-4000:]
    bad = {
        scenario: [f"{c['status']}: {c.get('id')}: {c.get('errorMessage', '')}" for c in checks
                   if c.get("status") in ("FAILURE", "WARNING") and ours(scenario, c)]
        for scenario, checks in outcome.checks.items()
    }
    assert {scenario: lines for scenario, lines in bad.items() if lines} == {}
    passed = sum(1 for checks in outcome.checks.values() for c in checks if c.get("status") == "SUCCESS")
    assert passed >= 130, outcome.counts()

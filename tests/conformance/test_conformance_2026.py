"""Conformance 0.2.0-alpha.12 `--requirements 2026-07-28` against a real gunicorn: every scenario it runs.

Scored and unscored alike (header validation, JSON Schema 2020-12 included); only the tasks extension is aside,
as the issue says.
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

# The tasks extension (not scored: "the tasks extension aside").
ELSEWHERE_PREFIXES = ("tasks-",)


@pytest.fixture(scope="module")
def fixture_server():
    """A gunicorn server with the 2025 and 2026 conformance fixtures loaded as plugins."""
    with ServerProcess(env={"MCP_PLUGINS": FIXTURE_PLUGINS}) as process:
        yield process


def ours(scenario: str, check: dict) -> bool:
    """Whether a check is this server's to pass (every scenario but the tasks extension's)."""
    return not scenario.startswith(ELSEWHERE_PREFIXES)


def test_no_check_fails_or_warns_but_the_tasks_extension(fixture_server, tmp_path):
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

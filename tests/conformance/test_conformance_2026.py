"""Conformance 0.2.0-alpha.12 `--requirements 2026-07-28` against a real gunicorn: every scenario it runs.

Scored and unscored alike (header validation, JSON Schema 2020-12 included), the tasks extension's ten tasks-*
scenarios too: the suite itself skips tasks-status-notifications (its harness does not read listen streams yet;
tests/protocol/test_tasks.py covers notifications/tasks), and every other check of theirs must pass.
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

TASK_SCENARIOS = ("tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
                  "tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope",
                  "tasks-status-notifications", "tasks-required-task-error", "tasks-mrtr-composition")
# The one check alpha.12 skips on its own side (its harness predates subscriptions/listen).
SKIPPED_BY_THE_SUITE = {("tasks-status-notifications", "tasks-status-notifications")}


@pytest.fixture(scope="module")
def fixture_server():
    """A gunicorn server with the 2025 and 2026 conformance fixtures loaded as plugins."""
    with ServerProcess(env={"MCP_PLUGINS": FIXTURE_PLUGINS}) as process:
        yield process


def test_no_check_fails_or_warns_the_tasks_extension_included(fixture_server, tmp_path):
    """Every scenario alpha.12 runs for 2026-07-28, scored or not, tasks-* too, passes every check it runs."""
    outcome = run_requirements(fixture_server.url, "2026-07-28", tmp_path)
    assert len(outcome.checks) >= 37, outcome.stdout[-4000:]
    assert set(TASK_SCENARIOS) <= set(outcome.checks), sorted(outcome.checks)
    bad = {
        scenario: [f"{c['status']}: {c.get('id')}: {c.get('errorMessage', '')}" for c in checks
                   if c.get("status") not in ("SUCCESS", "INFO")
                   and (scenario, c.get("id")) not in SKIPPED_BY_THE_SUITE]
        for scenario, checks in outcome.checks.items()
    }
    assert {scenario: lines for scenario, lines in bad.items() if lines} == {}
    passed = sum(1 for checks in outcome.checks.values() for c in checks if c.get("status") == "SUCCESS")
    assert passed >= 170, outcome.counts()
    task_checks = [c for scenario in TASK_SCENARIOS for c in outcome.checks[scenario]]
    assert sum(1 for c in task_checks if c.get("status") == "SUCCESS") >= 44, outcome.counts()

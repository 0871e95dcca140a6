"""Run either pinned conformance suite (0.1.16 or 0.2.0-alpha.12) against a URL and read its results.

`python -m tests.conformance.runner list 2026-07-28` prints the scenarios a requirement set runs;
`python -m tests.conformance.runner run URL 2026-07-28 OUT` runs it and prints every check that did not pass.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CLI_0_1",
    "CLI_NEXT",
    "NODE",
    "Outcome",
    "list_scenarios",
    "read_checks",
    "run_requirements",
    "summarize",
]

HERE = Path(__file__).resolve().parent
NODE = HERE / "node_modules" / ".bin" / "node"
CLI_0_1 = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
# npm alias "conformance-next" in package.json: the two versions cannot share a package name.
CLI_NEXT = HERE / "node_modules" / "conformance-next" / "dist" / "index.js"
PASSING = ("SUCCESS", "INFO")
# MCP_PLUGINS for a server the suite runs against: the 2025-era fixtures and the 2026-07-28 ones.
FIXTURE_PLUGINS = ",".join(f"tests.conformance.{name}"
                           for name in ("fixtures", "fixtures_2026", "input_required_fixtures", "tasks_fixtures"))
# The timestamp a run appends to each scenario's directory (its milliseconds may hold "-20" too).
RUN_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[0-9T:.Z-]*$")
SCENARIO_LINE = re.compile(r"^\s+- ([a-z0-9][a-z0-9/_.-]*)(?: \[(server|client)\])?$")


@dataclass(frozen=True)
class Outcome:
    """One conformance run: its exit code, console output and every scenario's checks."""

    returncode: int
    stdout: str
    stderr: str
    checks: dict[str, list[dict]]

    def failures(self, statuses: tuple[str, ...] = ("FAILURE",)) -> dict[str, list[str]]:
        """Scenario -> one line per check whose status is in statuses."""
        found = {
            scenario: [describe(check) for check in checks if check.get("status") in statuses]
            for scenario, checks in self.checks.items()
        }
        return {scenario: lines for scenario, lines in found.items() if lines}

    def counts(self) -> dict[str, int]:
        """How many checks ended in each status, over every scenario."""
        totals: dict[str, int] = {}
        for checks in self.checks.values():
            for check in checks:
                totals[check.get("status", "?")] = totals.get(check.get("status", "?"), 0) + 1
        return totals


def describe(check: dict) -> str:
    """One line for a check: status, id, and its error message (else its description)."""
    text = check.get("errorMessage") or check.get("description", "")
    return f"{check['status']}: {check.get('id', check.get('name'))}: {text}"


def run_requirements(url: str, revision: str, output_dir: Path, *args: str, cli: Path = CLI_NEXT,
                     timeout: float = 900) -> Outcome:
    """Run the frozen requirement set of one revision (alpha.12's --requirements) against url."""
    return run_cli(cli, ["server", "--url", url, "--requirements", revision, "-o", str(output_dir), *args],
                   output_dir, timeout)


def run_cli(cli: Path, argv: list[str], output_dir: Path, timeout: float) -> Outcome:
    """Run one conformance CLI with Node 22 and read the checks it wrote to output_dir."""
    completed = subprocess.run([str(NODE), str(cli), *argv], capture_output=True, text=True, timeout=timeout)
    return Outcome(completed.returncode, completed.stdout, completed.stderr, read_checks(output_dir))


def read_checks(output_dir: Path) -> dict[str, list[dict]]:
    """Every scenario's checks, from the server-<scenario>-<timestamp>/checks.json files a run wrote."""
    results = {}
    for checks_file in sorted(Path(output_dir).glob("server-*/checks.json")):
        scenario = RUN_STAMP.sub("", checks_file.parent.name.removeprefix("server-"))
        results[scenario] = json.loads(checks_file.read_text())
    return results


def list_scenarios(revision: str, cli: Path = CLI_NEXT) -> dict[str, list[str]]:
    """The server scenarios a requirement set runs: {"scored": [...], "not_scored": [...]}."""
    completed = subprocess.run([str(NODE), str(cli), "list", "--requirements", revision],
                               capture_output=True, text=True, timeout=60, check=True)
    return parse_list_output(completed.stdout)


def parse_list_output(text: str) -> dict[str, list[str]]:
    """Read `list --requirements` output: server scenarios, scored apart from run-but-not-scored."""
    scenarios: dict[str, list[str]] = {"scored": [], "not_scored": []}
    section = None
    for line in text.splitlines():
        if line.startswith("Server scenarios"):
            section = "scored"
        elif line.startswith("Client scenarios"):
            section = None
        elif line.startswith("Run and reported, but never scored"):
            section = "not_scored"
        elif section and (match := SCENARIO_LINE.match(line)):
            if section == "scored" or match.group(2) == "server":
                scenarios[section].append(match.group(1))
    return scenarios


def summarize(outcome: Outcome) -> str:
    """A few lines for a person: the CLI's totals, the status counts and every failed or warned check."""
    totals = [line for line in outcome.stdout.splitlines() if line.startswith("Total")]
    lines = [*totals, f"statuses: {outcome.counts()}"]
    for scenario, problems in sorted(outcome.failures(("FAILURE", "WARNING")).items()):
        lines.append(f"{scenario}:")
        lines.extend(f"  {problem}" for problem in problems)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Command line: `list REVISION` or `run URL REVISION OUTPUT_DIR`."""
    if len(argv) == 2 and argv[0] == "list":
        print(json.dumps(list_scenarios(argv[1]), indent=2))
        return 0
    if len(argv) == 4 and argv[0] == "run":
        outcome = run_requirements(argv[1], argv[2], Path(argv[3]))
        print(summarize(outcome))
        return outcome.returncode
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

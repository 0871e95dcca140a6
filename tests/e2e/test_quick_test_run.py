"""`scripts/test.sh --quick FILE`, the README's way to run one test of your own tool: no apt, no Node, no sudo."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.server_process import ROOT

# What the full run calls to install system packages and the conformance suite; --quick must call none of them.
INSTALLERS = ("apt-get", "sudo", "npm", "systemctl")
QUICK_RUN_TIMEOUT_S = 120


def stub_path(directory: Path, calls: Path) -> str:
    """A PATH with only dirname and installers that record their call and fail (so nothing is installed)."""
    for name in INSTALLERS:
        stub = directory / name
        stub.write_text(f'#!/bin/sh\necho {name} "$@" >> "{calls}"\nexit 1\n')
        stub.chmod(0o755)
    (directory / "dirname").symlink_to(shutil.which("dirname"))
    return str(directory)


def test_quick_runs_one_test_file_without_installing_system_packages(tmp_path):
    if not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("no .venv in the repository (scripts/test.sh or scripts/serve.sh makes it)")
    calls = tmp_path / "installer-calls.log"
    env = {**os.environ, "PATH": stub_path(tmp_path, calls)}
    done = subprocess.run(["/bin/bash", "scripts/test.sh", "--quick", "tests/protocol/test_echo.py", "-q",
                           "-p", "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=QUICK_RUN_TIMEOUT_S)
    assert not calls.exists(), calls.read_text()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout

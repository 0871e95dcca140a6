"""gunicorn.conf.py's hooks: a worker that never loaded the app exits without a traceback of the hook's own."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class WorkerThatFailedToBoot:
    """What gunicorn hands worker_exit when the app raised on import: no wsgi attribute."""

    pid = 12345
    alive = False


def test_the_exit_hook_passes_over_a_worker_that_failed_to_load_the_app(monkeypatch, tmp_path):
    # Loading the file sets both variables when unset: keep the test's environment as it was.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    monkeypatch.setenv("MCP_REQUEST_STATE_KEY", "ab" * 32)
    hooks = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    assert hooks["mcp_extension"](WorkerThatFailedToBoot()) is None
    hooks["worker_exit"](object(), WorkerThatFailedToBoot())  # raised AttributeError: no 'wsgi'

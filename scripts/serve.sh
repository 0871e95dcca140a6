#!/usr/bin/env bash
# Install the runtime into .venv and run the server on the embedded default:
# gunicorn, one gevent worker, in-memory sessions, http://127.0.0.1:8000/mcp.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
exec .venv/bin/gunicorn -c gunicorn.conf.py wsgi:app "$@"

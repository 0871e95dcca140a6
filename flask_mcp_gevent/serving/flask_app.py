"""The app `flask mcp serve` hands gunicorn: each worker loads it the way the flask command found it."""

from __future__ import annotations

import os

from flask.cli import ScriptInfo

from flask_mcp_gevent.serving.cli import APP_ENV

__all__ = ["app"]

# --app's value (a module, a module:name or module:factory(), or a path), or None to look for wsgi.py / app.py here.
app = ScriptInfo(app_import_path=os.environ.get(APP_ENV) or None).load_app()

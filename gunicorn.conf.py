"""gunicorn settings for the template: `gunicorn -c gunicorn.conf.py wsgi:app` (scripts/serve.sh).

They live in the package (flask_mcp_gevent/serving/gunicorn_config.py), so that an installed copy serves with the
same ones.
"""

from flask_mcp_gevent.serving.gunicorn_config import *  # noqa: F403 (gunicorn reads its settings and hooks by name)

"""gunicorn's entry point: `gunicorn -c gunicorn.conf.py wsgi:app`.

No monkey patching here: the gevent worker does it before loading this module.
"""

from app import create_app

app = create_app()

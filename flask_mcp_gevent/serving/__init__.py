"""Serving an app: gunicorn's settings and gevent worker, the `flask mcp` commands, and the processes they start."""

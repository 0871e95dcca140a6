"""gunicorn settings, taken from the same MCP_* variables as the app.

A command-line --bind (or -w) still overrides what is set here.
"""

import gevent

from mcp_server.config import ConfigError, Settings

settings = Settings.from_environ()  # refuses impossible combinations before any worker starts

bind = [settings.bind]
workers = settings.workers
worker_class = "gevent"
# Every open SSE stream holds one connection for its whole life.
worker_connections = settings.worker_connections
# Streams are long-lived; the worker heartbeat, not the request, is what timeout watches.
timeout = 30
graceful_timeout = settings.graceful_timeout_s
keepalive = 5
accesslog = None
errorlog = "-"
loglevel = settings.log_level.lower()
# gunicorn 27's control socket is one per user; several servers on a machine would collide.
control_socket_disable = True
# Never name versions in the Server header.
proc_name = "mcp-server"


def on_starting(server):
    """Refuse to listen beyond loopback without authentication: only here is the real bind (CLI --bind) known."""
    try:
        settings.check_exposure(server.cfg.bind)
    except ConfigError as refusal:
        # gunicorn prints a RuntimeError as "Error: ..." and exits 1, before opening any socket.
        raise RuntimeError(str(refusal)) from None


def post_worker_init(worker):
    """Watch for SIGTERM and close open streams at once instead of waiting out graceful_timeout."""

    def close_streams_on_exit():
        while worker.alive:
            gevent.sleep(0.25)
        extension = worker.wsgi.extensions.get("mcp") if hasattr(worker.wsgi, "extensions") else None
        if extension is not None:
            extension.shutdown()

    gevent.spawn(close_streams_on_exit)

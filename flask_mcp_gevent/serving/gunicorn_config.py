"""gunicorn settings, taken from the same MCP_* variables as the app.

The template loads it through gunicorn.conf.py at the top of the checkout; an installed package through
`gunicorn -c python:flask_mcp_gevent.serving.gunicorn_config` (what `flask mcp serve` runs). A command-line --bind
(or -w) still overrides what is set here.
"""

import dataclasses
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path

import gevent
from gunicorn.glogging import Logger as GunicornLogger

from flask_mcp_gevent import metrics
from flask_mcp_gevent.config import ConfigError, Settings
from flask_mcp_gevent.logs import JsonFormatter

try:
    settings = Settings.from_environ()  # refuses impossible combinations before any worker starts
except ConfigError as refusal:
    sys.exit(f"Error: {refusal}")  # one line that says why, not gunicorn's config-file traceback

def share_request_state_key():
    """Give every worker of this master one requestState key when nothing else shares one (no key, no Redis).

    Set here, before the workers fork, so a retry that lands on another worker of this host still opens; with
    Redis the store shares a key across hosts, and a configured MCP_REQUEST_STATE_KEY always wins.
    """
    if not settings.request_state_key and not settings.uses_redis:
        os.environ["MCP_REQUEST_STATE_KEY"] = secrets.token_hex(32)


share_request_state_key()
bind = [settings.bind]
workers = settings.workers
# gunicorn's gevent worker, answering the malformed HTTP that gunicorn refuses itself as JSON
# (flask_mcp_gevent/serving/gunicorn_worker.py).
worker_class = "flask_mcp_gevent.serving.gunicorn_worker.McpWorker"
# Every open SSE stream holds one connection for its whole life.
worker_connections = settings.worker_connections
# Streams are long-lived; the worker heartbeat, not the request, is what timeout watches.
timeout = 30
graceful_timeout = settings.graceful_timeout_s
# Idle keep-alive connections hold a worker's exit, so keep them short (gunicorn's default).
keepalive = 2
accesslog = None
errorlog = "-"
loglevel = settings.log_level.lower()
# gunicorn 27's control socket is one per user; several servers on a machine would collide.
control_socket_disable = True
# Never name versions in the Server header.
proc_name = "mcp-server"


class JsonLinesLogger(GunicornLogger):
    """gunicorn's own lines (boot, worker exits) as JSON too, when MCP_LOG_FORMAT=json."""

    def setup(self, cfg):
        """Build gunicorn's handlers (again on every reload), then give them the JSON formatter."""
        super().setup(cfg)
        for handler in self.error_log.handlers:
            handler.setFormatter(JsonFormatter())


if settings.log_format == "json":
    logger_class = JsonLinesLogger

# Prometheus multiprocess mode: each worker writes its metrics to files in this directory and /metrics adds
# them up. It must be in the environment before a worker imports prometheus_client, so it is set here; without
# prometheus-client (the metrics extra) there are no metrics, and no directory.
METRICS_DIR_PREFIX = "mcp-metrics-"
if metrics.available():
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix=METRICS_DIR_PREFIX)
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)


def metrics_dir_is_ours(path):
    """Whether the metrics directory is the temporary one made above (removed at exit) or the operator's."""
    return Path(path).parent == Path(tempfile.gettempdir()) and Path(path).name.startswith(METRICS_DIR_PREFIX)


def reset_metrics_dir():
    """Drop values left by an earlier run, so counters start from zero with the new master."""
    if metrics.available():
        for stale in Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).glob("*.db"):
            stale.unlink(missing_ok=True)


def on_starting(server):
    """Start from empty metrics; refuse to listen beyond loopback without authentication.

    Only here is the real bind (a CLI --bind included) known.
    """
    reset_metrics_dir()
    try:
        settings.check_exposure(server.cfg.bind)
        # A command-line -w bypasses MCP_WORKERS, so check the worker count gunicorn will really run.
        dataclasses.replace(settings, workers=server.cfg.workers).check()
    except ConfigError as refusal:
        # gunicorn prints a RuntimeError as "Error: ..." and exits 1, before opening any socket.
        raise RuntimeError(str(refusal)) from None


def mcp_extension(worker):
    """The app's MCP extension in this worker, or None (a worker that failed to load the app has no wsgi)."""
    extensions = getattr(getattr(worker, "wsgi", None), "extensions", None)
    return extensions.get("mcp") if extensions else None


def post_worker_init(worker):
    """Load the fleet's run-time registry changes; on SIGTERM close open streams at once and drain the calls."""
    mcp = mcp_extension(worker)
    if mcp is not None:
        mcp.server.prepare()  # before this worker accepts a connection
        mcp.start()  # its checks and warnings now, not at the first request

    def wind_down_on_exit():
        while worker.alive:
            gevent.sleep(0.25)
        extension = mcp_extension(worker)
        if extension is not None:
            extension.shutdown()
            # While gunicorn still serves this worker's connections, so each call's answer (or its error)
            # goes out on its own POST or stream before graceful_timeout would cut them.
            extension.drain()

    gevent.spawn(wind_down_on_exit)


def worker_exit(server, worker):
    """Before the worker exits, wait for the drain (a legacy call's answer outlives it with Redis), within bounds."""
    extension = mcp_extension(worker)
    if extension is not None:
        extension.drain()


def child_exit(server, worker):
    """Forget a dead worker's live gauges (open streams), so /metrics does not count them forever."""
    if metrics.available():
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def on_exit(server):
    """Remove the metrics directory when it is the temporary one this file made."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
    if path and metrics_dir_is_ours(path):
        shutil.rmtree(path, ignore_errors=True)

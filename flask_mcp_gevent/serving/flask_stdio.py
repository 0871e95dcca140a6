"""The process `flask mcp stdio` becomes: patch the standard library for gevent, load the app, serve it on stdio.

Run as `python -m flask_mcp_gevent.serving.flask_stdio`, with the app found as the flask command found it
(MCP_FLASK_APP, set by serving/cli.py): its tools, its settings and its application context.
"""

if __name__ == "__main__":
    # First lines on purpose: sockets, threads and stdin must be cooperative before anything imports them.
    from gevent import monkey

    monkey.patch_all()

import sys  # noqa: E402

from flask import Flask  # noqa: E402

from flask_mcp_gevent.server import Server  # noqa: E402
from flask_mcp_gevent.store.memory import MemoryStore  # noqa: E402
from flask_mcp_gevent.transports.stdio import run_stdio  # noqa: E402
from flask_mcp_gevent.web.app_context import app_runner  # noqa: E402
from flask_mcp_gevent.web.mcp_app import server_of  # noqa: E402

__all__ = ["serve_app"]


def serve_app(app: Flask) -> int:
    """Serve app's MCP tools on stdin/stdout until EOF or SIGTERM, each call inside the app's context."""
    served = server_of(app)
    # A server of its own: its sessions and event log stay empty (the one client's session is its connection's),
    # its fleet of one keeps what a 2026-07-28 request consumed, and the task store beside it, its tasks.
    server = Server(served.settings, registry=served.registry, store=MemoryStore(served.settings),
                    run_in_app=app_runner(app))
    return run_stdio(server)


if __name__ == "__main__":
    from flask_mcp_gevent.serving.flask_app import app as loaded

    sys.exit(serve_app(loaded))

"""The app factory, and the local entry points: `python app.py` (dev server) and `--stdio`.

gunicorn loads `wsgi:app` instead; its gevent worker patches the standard library
before loading, so only the entry points below patch it themselves.
"""

if __name__ == "__main__":
    # First lines on purpose: sockets, threads and stdin must be cooperative before anything imports them.
    try:
        from gevent import monkey
    except ModuleNotFoundError as missing:
        # A python without the server's packages (a clean shell's python3): say how to run it, not a traceback.
        raise SystemExit(f"app.py: {missing}. The server's packages live in .venv: run scripts/serve.sh once (or "
                         "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt), then "
                         ".venv/bin/python app.py") from None

    monkey.patch_all()

import argparse
import signal
import sys
from typing import Any

from flask import Flask

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.extension import MCP
from flask_mcp_gevent.logs import configure_logging
from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.web.flask_extension import settings_of

__all__ = ["create_app"]


def create_app(config: Any = None) -> Flask:
    """Build the Flask app; config is Settings, a dict of MCP_* values, or None for the environment."""
    settings = settings_of(config)
    configure_logging(settings.log_level, settings.log_format)
    app = Flask(__name__)
    # The whole app is MCP (the console at /, /healthz, JSON errors), serving the tools of mcp_tools/.
    MCP(app, settings=settings, registry=Registry.discover(), whole_app=True)
    return app


def serve_dev(settings: Settings) -> None:
    """Run a single-process gevent server for local development."""
    import gevent
    from gevent.pywsgi import WSGIServer

    app = create_app(settings)
    host, _, port = settings.bind.rpartition(":")
    server = WSGIServer((host.strip("[]"), int(port)), app, log=None)

    def stop() -> None:
        """Close open streams first, so stopping does not wait for them."""
        app.extensions["mcp"].shutdown()
        server.stop(timeout=settings.graceful_timeout_s)

    gevent.signal_handler(signal.SIGTERM, stop)
    gevent.signal_handler(signal.SIGINT, stop)
    print(f"MCP server on http://{settings.bind}/mcp (Ctrl-C to stop)", file=sys.stderr)
    server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and run the chosen transport."""
    parser = argparse.ArgumentParser(description="Flask MCP server")
    parser.add_argument("--stdio", action="store_true", help="speak newline-delimited JSON-RPC on stdin/stdout")
    parser.add_argument("--bind", help="HOST:PORT for the dev server (overrides MCP_BIND)")
    args = parser.parse_args(argv)
    overrides = {"bind": args.bind} if args.bind else {}
    settings = Settings.from_environ(**overrides)
    if args.stdio:
        from flask_mcp_gevent.serving.flask_stdio import serve_app

        return serve_app(create_app(settings))
    serve_dev(settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())

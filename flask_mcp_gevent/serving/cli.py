"""`flask --app APP mcp ...`: list and call the app's tools, serve them on stdio, or run the app under gunicorn.

`tools` and `call` talk to the app's own server in this process, as a local stdio client would (no HTTP, no
credentials: the local user, who may use everything, a principal_loader or not); `stdio` serves the app's tools to
a client that started this command (what Claude Desktop does), in a process of its own that patches the standard
library for gevent before anything is imported; `serve` runs the app under gunicorn with its gevent worker and the
MCP_* settings. Both find the app as this command did (--app, FLASK_APP, or app.py / wsgi.py here).
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

import click
from flask import current_app
from flask.cli import AppGroup, ScriptInfo, pass_script_info

from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.session import LATEST, STDIO, Session
from flask_mcp_gevent.web.mcp_app import server_of

__all__ = ["APP_ENV", "LocalClient", "mcp_cli"]

# How `flask mcp serve` tells the gunicorn worker which app to load (flask_mcp_gevent.serving.flask_app).
APP_ENV = "MCP_FLASK_APP"
# A local call waits this long for its answer; a tool that needs longer is better run over a wire.
CALL_TIMEOUT_S = 300.0

mcp_cli = AppGroup("mcp", help="The app's MCP server: list or call its tools, serve them on stdio or over HTTP.")


class LocalClient:
    """One session of the app's server, as a stdio client opens it (never stored): requests in, responses out."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.session = Session(transport=STDIO)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": LATEST, "capabilities": {},
                                    "clientInfo": {"name": "flask-mcp-cli", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Hand one message to the server; the response of a request, None for a notification."""
        greenlets, errors = self.server.accept(self.session, parse_body(dumps(message)), lambda sent: None)
        if errors:
            return errors[0]
        for greenlet in greenlets:
            greenlet.join(CALL_TIMEOUT_S)
        return greenlets[0].value if greenlets else None

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request; its result, or click's error naming the JSON-RPC error."""
        self.next_id += 1
        response = self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        if response is None:
            raise click.ClickException(f"{method}: no answer within {CALL_TIMEOUT_S:g} s")
        if "error" in response:
            error = response["error"]
            raise click.ClickException(f"{method}: {error.get('message')} ({error.get('code')})")
        return response["result"]

    def tools(self) -> list[dict[str, Any]]:
        """Every tool, page after page."""
        tools: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        while True:
            page = self.request("tools/list", params)
            tools += page.get("tools", [])
            if not page.get("nextCursor"):
                return tools
            params = {"cursor": page["nextCursor"]}


@mcp_cli.command("tools")
@click.option("--json", "as_json", is_flag=True, help="Print the tools as tools/list gives them, in JSON.")
def list_tools(as_json: bool) -> None:
    """List the app's tools: each name with the first line of its description."""
    tools = LocalClient(server_of(current_app)).tools()
    if as_json:
        click.echo(dumps({"tools": tools}))
        return
    width = max((len(tool["name"]) for tool in tools), default=0)
    for tool in tools:
        summary = (tool.get("description") or "").strip().splitlines()
        click.echo(f"{tool['name']:<{width}}  {summary[0] if summary else ''}".rstrip())


@mcp_cli.command("call")
@click.argument("name")
@click.argument("arguments", default="{}")
def call_tool(name: str, arguments: str) -> None:
    """Call the tool NAME with ARGUMENTS (a JSON object) and print its result; exit 1 when the tool failed."""
    try:
        parsed = parse_arguments(arguments)
    except ValueError as problem:
        raise click.BadParameter(str(problem), param_hint="ARGUMENTS") from None
    result = LocalClient(server_of(current_app)).request("tools/call", {"name": name, "arguments": parsed})
    click.echo(dumps(result))
    if result.get("isError"):
        sys.exit(1)


def parse_arguments(text: str) -> dict[str, Any]:
    """The tool's arguments from the command line: a JSON object."""
    try:
        value = loads(text)
    except ValueError as problem:
        raise ValueError(f"not JSON: {problem}") from None
    if not isinstance(value, dict):
        raise ValueError("must be a JSON object, e.g. '{\"a\": 1}'")
    return value


@mcp_cli.command("stdio", with_appcontext=False)
@pass_script_info
def serve_stdio(info: ScriptInfo) -> None:
    """Serve the app's tools on stdin/stdout (newline-delimited JSON-RPC), as an MCP client that starts it expects."""
    # Patching gevent here, after this command imported Flask, the app and ssl, would warn at every start and leave
    # what was imported unpatched: a process of its own patches first, as app.py --stdio does.
    os.environ[APP_ENV] = info.app_import_path or ""
    os.execv(sys.executable, [sys.executable, "-m", "flask_mcp_gevent.serving.flask_stdio"])


@mcp_cli.command("serve", context_settings={"ignore_unknown_options": True})
@click.option("--bind", help="HOST:PORT to listen on (default: MCP_BIND, 127.0.0.1:8000).")
@click.option("-w", "--workers", type=int, help="Worker processes (default: MCP_WORKERS, 1).")
@click.argument("gunicorn_args", nargs=-1, type=click.UNPROCESSED)
@pass_script_info
def serve(info: ScriptInfo, bind: str | None, workers: int | None, gunicorn_args: tuple[str, ...]) -> None:
    """Run the app under gunicorn with its gevent worker and the MCP_* settings; other options go to gunicorn."""
    gunicorn = shutil.which("gunicorn", path=os.path.dirname(sys.executable)) or shutil.which("gunicorn")
    if gunicorn is None:
        raise click.ClickException("gunicorn is not installed in this environment (pip install gunicorn)")
    argv = [gunicorn, "-c", "python:flask_mcp_gevent.serving.gunicorn_config"]
    argv += ["--bind", bind] if bind else []
    argv += ["--workers", str(workers)] if workers else []
    # The worker loads the app the way this command did (--app, FLASK_APP, or app.py / wsgi.py here).
    os.environ[APP_ENV] = info.app_import_path or ""
    os.execv(gunicorn, [*argv, *gunicorn_args, "flask_mcp_gevent.serving.flask_app:app"])

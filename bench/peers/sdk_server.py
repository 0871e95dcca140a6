"""The official SDK's own server with the same echo tool: `MCPServer` on uvicorn.

    python -m bench.peers.sdk_server --transport sse --port 8001          # GET /sse, POST /messages/
    python -m bench.peers.sdk_server --transport streamable --port 8001   # POST /mcp, default (stateful, SSE) mode

The SDK's defaults are kept: DNS-rebinding protection on loopback, stateful
sessions, SSE-framed answers on Streamable HTTP. Only uvicorn's access log is off,
as gunicorn's is for our server.
"""

from __future__ import annotations

import argparse

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-sdk")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


def main(argv: list[str] | None = None) -> None:
    """Serve one transport on 127.0.0.1:PORT until SIGTERM."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--transport", choices=("sse", "streamable"), required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    app = server.sse_app() if args.transport == "sse" else server.streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()

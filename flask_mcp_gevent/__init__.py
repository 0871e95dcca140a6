"""An MCP server on Flask: `from flask_mcp_gevent import MCP`, then `mcp = MCP(app)` (see extension.py).

MCP is imported on first use, so importing a light part of the package (the toolkit a tool file uses)
does not pull in Flask and the whole server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flask_mcp_gevent.extension import MCP

__all__ = ["MCP"]


def __getattr__(name: str) -> Any:
    """Import MCP when it is first asked for."""
    if name == "MCP":
        from flask_mcp_gevent.extension import MCP

        return MCP
    raise AttributeError(f"module 'flask_mcp_gevent' has no attribute {name!r}")

"""An MCP server on Flask: `from mcp_server import MCP`, then `mcp = MCP(app)` (see mcp_server/extension.py).

MCP is imported on first use, so importing a light part of the package (the toolkit a tool file uses)
does not pull in Flask and the whole server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_server.extension import MCP

__all__ = ["MCP"]


def __getattr__(name: str) -> Any:
    """Import MCP when it is first asked for."""
    if name == "MCP":
        from mcp_server.extension import MCP

        return MCP
    raise AttributeError(f"module 'mcp_server' has no attribute {name!r}")

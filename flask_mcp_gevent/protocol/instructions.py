"""The `instructions` of initialize and server/discover: MCP_INSTRUCTIONS, or a line naming the tools served.

Derived from the registry when asked, so a tool added to mcp_tools/ (or at run time) is named without a
setting to keep in step, and a principal is told only of the tools it may call.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

__all__ = ["MAX_NAMED_TOOLS", "describe_tools", "server_instructions"]

# Instructions are read by a model on every connection: a long registry gets its first tools named and a count.
MAX_NAMED_TOOLS = 20
MAX_SUMMARY_CHARS = 80


def summary(description: str) -> str:
    """A tool description's first line, without its full stop, cut to MAX_SUMMARY_CHARS."""
    lines = description.strip().splitlines()
    first = lines[0].strip().rstrip(".") if lines else ""
    return first if len(first) <= MAX_SUMMARY_CHARS else first[:MAX_SUMMARY_CHARS - 3].rstrip() + "..."


def describe_tools(tools: Iterable[Any]) -> str:
    """One line naming the tools by name order, each with its summary; empty when there are none."""
    tools = list(tools)
    named = heapq.nsmallest(MAX_NAMED_TOOLS, tools, key=lambda tool: tool.name)
    if not named:
        return ""
    parts = [f"{tool.name} ({summary(tool.description)})" if tool.description.strip() else tool.name
             for tool in named]
    line = "Tools: " + ", ".join(parts) + "."
    if len(tools) > len(named):
        line += f" And {len(tools) - len(named)} more: see tools/list."
    return line


def server_instructions(ctx: Any) -> str:
    """MCP_INSTRUCTIONS when set (empty: none), else the line about the tools this request's principal may call."""
    configured = ctx.settings.instructions
    if configured is not None:
        return configured
    return describe_tools(ctx.visible("tool", ctx.registry.tools))

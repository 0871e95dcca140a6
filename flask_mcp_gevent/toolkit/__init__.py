"""What tool files are built with: the decorators and specs, their checks, the registry, `ctx` and content blocks.

Tool authors import these names from `flask_mcp_gevent` (or, in the template, `mcp_tools`), which re-export them;
the server imports them from here. Nothing in this package imports the rest of the server or Flask, so a tool
file pulls in only this.
"""

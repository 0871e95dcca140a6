"""What tool files are built with: the decorators and specs, their checks, the registry, `ctx` and content blocks.

Tool authors import these names from `mcp_tools`, which re-exports them; the server imports them from here.
Nothing in this package imports the rest of the server or Flask, so a tool file pulls in only this.
"""

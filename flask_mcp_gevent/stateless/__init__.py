"""The MCP 2026-07-28 stateless wire: era routing, request validation, requestState and result decoration.

Pure functions over plain JSON values and header mappings; nothing here imports Flask, a transport or the store,
so the wire (whichever transport module carries it) calls these and stays thin.
"""

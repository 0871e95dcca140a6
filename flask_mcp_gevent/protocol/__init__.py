"""The MCP protocol: the method handlers, the request context they and the tools get, and what they build on."""

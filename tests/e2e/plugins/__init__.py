"""Tool modules the e2e servers load through MCP_PLUGINS (never discovered by default)."""

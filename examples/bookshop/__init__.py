"""An existing Flask app with MCP added: see app.py."""

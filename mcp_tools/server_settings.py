"""A resource with a fixed URI: a summary of this server's own settings (no secrets)."""

import json

from mcp_tools import resource

# Only settings that say how the server behaves; never keys, URLs with credentials or file paths.
PUBLIC_SETTINGS = ("keepalive_s", "session_ttl_s", "max_body_bytes", "page_size", "workers")


@resource("config://server", name="server_settings", mime_type="application/json")
def server_settings(ctx) -> str:
    """Summarise how this server is configured: limits, timeouts and session store."""
    settings = ctx.settings
    summary = {name: getattr(settings, name) for name in PUBLIC_SETTINGS}
    summary["session_store"] = "redis" if settings.redis_url else "memory"
    return json.dumps(summary, indent=2, sort_keys=True)

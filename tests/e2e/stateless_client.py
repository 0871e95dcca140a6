"""The 2026-07-28 wire as curl speaks it: one POST per request, `_meta` and the standard headers, no session."""

from __future__ import annotations

import itertools
from typing import Any

import httpx

from tests.e2e.raw_clients import BOTH

STATELESS_VERSION = "2026-07-28"
NAME_SOURCES = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}

_ids = itertools.count(1)


def stateless_meta(**extra: Any) -> dict[str, Any]:
    """The _meta every 2026-07-28 request carries, plus extra keys."""
    return {"io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            **extra}


def stateless_request(method: str, params: dict[str, Any] | None = None, request_id: Any = None,
                   meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-07-28 request: params with _meta (a fresh integer id unless one is given)."""
    return {"jsonrpc": "2.0", "id": next(_ids) if request_id is None else request_id, "method": method,
            "params": {**(params or {}), "_meta": stateless_meta() if meta is None else meta}}


def stateless_headers(message: dict[str, Any], **extra: str) -> dict[str, str]:
    """The headers that mirror a request's body: MCP-Protocol-Version, Mcp-Method and Mcp-Name where due."""
    found = {"Accept": BOTH, "Content-Type": "application/json", "MCP-Protocol-Version": STATELESS_VERSION,
             "Mcp-Method": message["method"]}
    source = NAME_SOURCES.get(message["method"])
    if source is not None:
        found["Mcp-Name"] = str(message["params"][source])
    return {**found, **extra}


def post(http: httpx.Client, url: str, message: dict[str, Any], **headers: str) -> httpx.Response:
    """POST one message with the headers that mirror it (overridden or added by headers)."""
    return http.post(url, json=message, headers=stateless_headers(message, **headers))

"""Results on the 2026-07-28 wire: `resultType`, server identity in `_meta`, cache hints, and server/discover.

Handlers build the same result bodies for both eras; the server passes each stateless response through
`dress_response` (a result through `decorate`, an error through `stateless_error`) on its way out, so the
session era's responses stay byte-for-byte what they were.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from flask_mcp_gevent.errors import INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND, error_response
from flask_mcp_gevent.logs import loggable
from flask_mcp_gevent.messages import Message
from flask_mcp_gevent.stateless import metadata
from flask_mcp_gevent.stateless.metadata import SUPPORTED_VERSIONS

__all__ = [
    "CACHEABLE_METHODS",
    "COMPLETE",
    "INPUT_REQUIRED",
    "INPUT_REQUIRED_METHODS",
    "CacheHint",
    "cache_hint",
    "decorate",
    "discover_result",
    "dress_response",
    "input_required",
    "stateless_capabilities",
    "stateless_error",
]

log = logging.getLogger("mcp.rpc")
COMPLETE = "complete"
INPUT_REQUIRED = "input_required"
# Results that MUST carry ttlMs and cacheScope when complete (server/utilities/caching.mdx).
CACHEABLE_METHODS = frozenset({
    "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read",
})
# The only requests that may answer input_required (basic/patterns/mrtr.mdx).
INPUT_REQUIRED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
# ServerCapabilities members 2026-07-28 defines; anything else the legacy list has (tasks) is left out.
CAPABILITY_KEYS = ("experimental", "logging", "completions", "prompts", "resources", "tools", "extensions")


@dataclass(frozen=True)
class CacheHint:
    """How long a client may reuse a result (ttlMs, never negative) and whether caches may share it."""

    ttl_ms: int = 0
    scope: str = "private"

    def fields(self) -> dict[str, Any]:
        """The two result members, as the wire spells them."""
        return {"ttlMs": max(0, int(self.ttl_ms)), "cacheScope": self.scope}


def cache_hint(authenticated: bool, ttl_ms: int = 0, retried: bool = False) -> CacheHint:
    """Choose the hint: private when answers depend on who asks (authentication on) or on a retry's inputs.

    The default ttlMs 0 ("immediately stale") is right for a server whose lists change at run time and say so
    with list_changed; a retried request (inputResponses or requestState) must never be reused at all.
    """
    if retried:
        return CacheHint(0, "private")
    return CacheHint(ttl_ms, "private" if authenticated else "public")


def decorate(method: str, result: dict[str, Any], server_info: dict[str, Any] | None,
             hint: CacheHint | None = None) -> dict[str, Any]:
    """Return result as the 2026-07-28 wire sends it: resultType, _meta serverInfo, cache hints where due.

    Raises ValueError for an input_required result on a method that may not return one: that is a server bug,
    and the wire should answer it as an internal error rather than send it.
    """
    decorated = dict(result)
    result_type = decorated.setdefault("resultType", COMPLETE)
    if result_type == INPUT_REQUIRED and method not in INPUT_REQUIRED_METHODS:
        raise ValueError(f"{method} may not return input_required")
    if server_info is not None:
        found = decorated.get("_meta")
        decorated["_meta"] = {**(found if isinstance(found, dict) else {}), metadata.SERVER_INFO: server_info}
    if result_type == COMPLETE and method in CACHEABLE_METHODS:
        for key, value in (hint or CacheHint()).fields().items():
            decorated.setdefault(key, value)
    return decorated


def input_required(input_requests: dict[str, Any] | None = None, request_state: str | None = None) -> dict[str, Any]:
    """Build an InputRequiredResult; it needs inputRequests, requestState or both."""
    if not input_requests and request_state is None:
        raise ValueError("an input_required result needs inputRequests or requestState")
    result: dict[str, Any] = {"resultType": INPUT_REQUIRED}
    if input_requests:
        result["inputRequests"] = input_requests
    if request_state is not None:
        result["requestState"] = request_state
    return result


def stateless_capabilities(capabilities: dict[str, Any]) -> dict[str, Any]:
    """Keep only the ServerCapabilities members 2026-07-28 has (tasks moved to an extension)."""
    return {key: capabilities[key] for key in CAPABILITY_KEYS if key in capabilities}


def discover_result(capabilities: dict[str, Any], server_info: dict[str, Any], instructions: str = "",
                    hint: CacheHint | None = None,
                    versions: tuple[str, ...] = SUPPORTED_VERSIONS) -> dict[str, Any]:
    """Build the server/discover result: versions, capabilities, instructions, identity and cache hints."""
    result: dict[str, Any] = {
        "resultType": COMPLETE,
        "supportedVersions": list(versions),
        "capabilities": stateless_capabilities(capabilities),
    }
    if instructions:
        result["instructions"] = instructions
    return decorate("server/discover", result, server_info, hint)


def stateless_error(error: dict[str, Any]) -> dict[str, Any]:
    """Translate a JSON-RPC error object to this wire: resource not found is -32602 with data.uri, not -32002."""
    return {**error, "code": INVALID_PARAMS} if error.get("code") == RESOURCE_NOT_FOUND else error


def dress_response(message: Message, response: dict[str, Any], server_info: dict[str, Any],
                   authenticated: bool) -> dict[str, Any]:
    """The one place a 2026-07-28 response is dressed: resultType, serverInfo, cache hints; this wire's codes."""
    if "error" in response:
        return {**response, "error": stateless_error(response["error"])}
    retried = "inputResponses" in message.params or "requestState" in message.params
    hint = cache_hint(authenticated, retried=retried)
    result = response.get("result")
    try:
        decorated = decorate(message.method or "", result if isinstance(result, dict) else {}, server_info, hint)
    except ValueError:
        log.exception("handler for %s broke the 2026-07-28 result rules", loggable(message.method))
        return error_response(message.id, INTERNAL_ERROR, "Internal error")
    return {**response, "result": decorated}

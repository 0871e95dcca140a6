"""Calling a handler of the explicit method tables through jsonrpcserver: lookup, binding, call, Success/Error.

jsonrpcserver's own entry point would parse, validate and batch-split again what messages.py has already done,
so the dispatcher calls the steps after those, as that entry point does for each request it has split out.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from jsonrpcserver.dispatcher import call, dispatch_request, to_response
from jsonrpcserver.request import Request as JsonRpcRequest
from jsonrpcserver.response import ServerErrorResponse, to_serializable_one
from jsonrpcserver.sentinels import NOID
from oslash.either import Left

from mcp_server.logs import loggable
from mcp_server.messages import REQUEST, Message
from mcp_server.protocol.methods import ANY_PARAMS

__all__ = ["discard", "jsonrpc_dispatch"]

log = logging.getLogger("mcp.rpc")


def discard(message: dict[str, Any]) -> None:
    """The send of a request that has no stream: the client asked for nothing it could carry."""
    log.debug("dropped %s: the request asked for no stream", loggable(message.get("method")))


def jsonrpc_dispatch(methods: dict[str, Any], ctx: Any, message: Message) -> dict[str, Any] | None:
    """One message through jsonrpcserver's dispatch (lookup, binding, call, Success/Error); its response, or None."""
    method = message.method or ""  # set on every request and notification: only those come here
    request = JsonRpcRequest(method, message.params, message.id if message.kind == REQUEST else NOID)
    try:
        handler = methods.get(method)
        if handler is not None and getattr(handler, "__signature__", None) is ANY_PARAMS:
            # A guarded handler binds any params and checks them itself, so jsonrpcserver's binding has nothing to do.
            result = call(request, ctx, handler)
        else:
            _, result = dispatch_request(methods, ctx, request)
        return None if request.id is NOID else serialized(to_response(request, result))
    except Exception:
        # As jsonrpcserver's entry point does: a failure of the library itself is a server error.
        log.exception("jsonrpcserver failed on %s", loggable(message.method))
        return serialized(Left(ServerErrorResponse("Server error", message.id)))


def serialized(response: Any) -> dict[str, Any]:
    """One response as a dict: to_serializable_one's annotation allows a list or None, but one response is a dict."""
    return cast("dict[str, Any]", to_serializable_one(response))

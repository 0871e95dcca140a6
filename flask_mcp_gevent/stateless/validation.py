"""Validation of one 2026-07-28 request, in the specification's order: the first failure wins.

1. `params._meta` missing or malformed, or without protocolVersion / clientCapabilities: -32602, HTTP 400.
2. HTTP only: MCP-Protocol-Version, Mcp-Method or Mcp-Name missing, invalid or unlike the body: -32020, 400.
3. A protocol version this wire does not serve: -32022, 400, data {supported, requested}.
4. A method it does not serve (initialize, ping and the other removed ones included): -32601, 404.
`Mcp-Param-*` headers need the tool's inputSchema, so the wire checks them with `check_param_headers` once it
knows the tool. Every rejection carries the request's own id.
"""

from __future__ import annotations

import decimal
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from flask_mcp_gevent.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    error_response,
)
from flask_mcp_gevent.stateless import metadata
from flask_mcp_gevent.stateless.metadata import SUPPORTED_VERSIONS, is_stateless_version

__all__ = [
    "STATELESS_METHODS",
    "REMOVED_METHODS",
    "HeaderParam",
    "InvalidHeaderAnnotation",
    "Rejection",
    "check_header_annotations",
    "check_meta",
    "check_method",
    "check_param_headers",
    "check_standard_headers",
    "check_version",
    "header_params",
    "http_status",
    "missing_capability",
    "request_id",
    "validate_request",
]

STATELESS_METHODS = frozenset({
    "server/discover", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
    "resources/read", "resources/templates/list", "completion/complete", "subscriptions/listen",
    "tasks/get", "tasks/update", "tasks/cancel",
})
# Methods 2026-07-28 removed, with what replaced each: the -32601 message says so.
REMOVED_METHODS = {
    "initialize": "there is no handshake: send _meta with every request (server/discover tells what the server has)",
    "ping": "ping was removed",
    "logging/setLevel": "set _meta io.modelcontextprotocol/logLevel on each request instead",
    "resources/subscribe": "use subscriptions/listen with notifications.resourceSubscriptions",
    "resources/unsubscribe": "close the subscriptions/listen stream instead",
    "tasks/result": "tasks moved to the io.modelcontextprotocol/tasks extension",
    "tasks/list": "tasks moved to the io.modelcontextprotocol/tasks extension",
}
# Which method's Mcp-Name mirrors which params member.
NAME_SOURCES = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
                "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
STATUS_BY_CODE = {
    PARSE_ERROR: 400, INVALID_REQUEST: 400, INVALID_PARAMS: 400, HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400, UNSUPPORTED_PROTOCOL_VERSION: 400, METHOD_NOT_FOUND: 404,
}
TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 9110 tchar
HEADER_TYPES = ("integer", "string", "boolean")
# Keywords whose members are keyed by a name, so a key spelled "x-mcp-header" there is a name, not the keyword.
NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})  # their values are instances, not schemas
SAFE_INTEGER = 2**53 - 1
QUOTE_MAX = 64


@dataclass(frozen=True)
class Rejection:
    """A request refused before dispatch: its JSON-RPC error and the HTTP status that carries it."""

    request_id: Any
    code: int
    message: str
    data: Any = None
    http_status: int = 400

    def response(self) -> dict[str, Any]:
        """The JSON-RPC error response object."""
        return error_response(self.request_id, self.code, self.message, self.data)


class InvalidHeaderAnnotation(ValueError):
    """A tool inputSchema whose x-mcp-header annotations break the specification's constraints."""


@dataclass(frozen=True)
class HeaderParam:
    """One x-mcp-header annotation: the header suffix, the `properties` path to the value and its type."""

    header: str
    path: tuple[str, ...]
    type: str

    @property
    def header_name(self) -> str:
        """The full header name, Mcp-Param-{header}."""
        return metadata.MCP_PARAM_PREFIX + self.header


def http_status(code: int) -> int:
    """The HTTP status a JSON-RPC error goes out with on the 2026-07-28 wire (200 for the rest)."""
    return STATUS_BY_CODE.get(code, 200)


def request_id(message: object) -> Any:
    """The request's id when it is a valid one (string or integer), else None."""
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, (str, int)) and not isinstance(found, bool) else None


def reject(message: object, code: int, text: str, data: Any = None) -> Rejection:
    """Build the rejection for message, with its id and the code's HTTP status."""
    return Rejection(request_id(message), code, text, data, http_status(code))


def quote(value: object) -> str:
    """Render a client-chosen value for an error message: JSON-escaped and cut short."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= QUOTE_MAX else text[:QUOTE_MAX] + "..."


def validate_request(message: object, request_headers: Mapping[str, str] | None = None,
                     methods: frozenset[str] = STATELESS_METHODS,
                     supported: tuple[str, ...] = SUPPORTED_VERSIONS) -> Rejection | None:
    """Run every pre-dispatch check in order; None when the request may be dispatched.

    request_headers is None on stdio, which has no header layer; supported is what -32022 names.
    """
    if not (isinstance(message, dict) and isinstance(message.get("method"), str)):
        return reject(message, INVALID_REQUEST, "Invalid request: expected one JSON-RPC request object")
    return (check_meta(message)
            or (check_standard_headers(message, request_headers) if request_headers is not None else None)
            or check_version(message, supported)
            or check_method(message, methods))


def check_meta(message: dict) -> Rejection | None:
    """Refuse a request whose params._meta lacks what 2026-07-28 requires (-32602)."""
    params = message.get("params")
    if not isinstance(params, dict):
        return reject(message, INVALID_PARAMS, "Invalid params: params must be an object carrying _meta with "
                      f"{metadata.PROTOCOL_VERSION} and {metadata.CLIENT_CAPABILITIES}")
    found = params.get("_meta")
    if not isinstance(found, dict):
        return reject(message, INVALID_PARAMS, "Invalid params: params._meta must be an object carrying "
                      f"{metadata.PROTOCOL_VERSION} and {metadata.CLIENT_CAPABILITIES}")
    missing = [key for key in (metadata.PROTOCOL_VERSION, metadata.CLIENT_CAPABILITIES) if key not in found]
    if missing:
        return reject(message, INVALID_PARAMS, f"Invalid params: params._meta lacks {', '.join(missing)}")
    if not isinstance(found[metadata.PROTOCOL_VERSION], str):
        return reject(message, INVALID_PARAMS, f"Invalid params: _meta {metadata.PROTOCOL_VERSION} must be a string")
    if not isinstance(found[metadata.CLIENT_CAPABILITIES], dict):
        return reject(message, INVALID_PARAMS,
                      f"Invalid params: _meta {metadata.CLIENT_CAPABILITIES} must be an object")
    if metadata.CLIENT_INFO in found and not isinstance(found[metadata.CLIENT_INFO], dict):
        return reject(message, INVALID_PARAMS, f"Invalid params: _meta {metadata.CLIENT_INFO} must be an object")
    if metadata.LOG_LEVEL in found and not isinstance(found[metadata.LOG_LEVEL], str):
        # Else the request's session would hold no level, and it would be served silently without its logs.
        return reject(message, INVALID_PARAMS, f"Invalid params: _meta {metadata.LOG_LEVEL} must be a level name "
                      "(a string such as \"info\")")
    return None


def header_value(message: dict, request_headers: Mapping[str, str], name: str,
                 sentinel: bool) -> tuple[str | None, Rejection | None]:
    """Read one header for comparison: (value, None), (None, None) when absent, or (None, rejection).

    Only Mcp-Name and Mcp-Param-* (sentinel=True) may use the Base64 form; the others are compared as sent.
    """
    raw = metadata.get_header(request_headers, name)
    if raw is None:
        return None, None
    try:
        return (metadata.decode_value(raw) if sentinel else metadata.plain_value(raw)), None
    except metadata.InvalidHeaderValue as problem:
        return None, reject(message, HEADER_MISMATCH, f"Header mismatch: {name} header {problem}")


def mismatch(message: dict, name: str, header: str, body: object) -> Rejection:
    """The -32020 for a header whose value differs from the body's."""
    return reject(message, HEADER_MISMATCH,
                  f"Header mismatch: {name} header value {quote(header)} does not match body value {quote(body)}")


def missing_header(message: dict, name: str, source: str) -> Rejection:
    """The -32020 for a required header the client left out."""
    return reject(message, HEADER_MISMATCH, f"Header mismatch: missing {name} header (it must repeat {source})")


def check_standard_headers(message: dict, request_headers: Mapping[str, str]) -> Rejection | None:
    """Refuse missing, invalid or mismatched MCP-Protocol-Version, Mcp-Method and Mcp-Name headers (-32020)."""
    version = message["params"]["_meta"][metadata.PROTOCOL_VERSION]
    checks = [(metadata.PROTOCOL_VERSION_HEADER, version, "_meta " + metadata.PROTOCOL_VERSION, False),
              (metadata.MCP_METHOD, message["method"], "the body's method", False)]
    source = NAME_SOURCES.get(message["method"])
    if source is not None:
        checks.append((metadata.MCP_NAME, message["params"].get(source), f"params.{source}", True))
    for name, body, described, sentinel in checks:
        value, problem = header_value(message, request_headers, name, sentinel)
        if problem is not None:
            return problem
        if value is None:
            if body is None and name == metadata.MCP_NAME:
                continue  # no name in the body either: the method's own params check answers
            return missing_header(message, name, described)
        if value != body:
            return mismatch(message, name, value, body)
    return None


def check_version(message: dict, supported: tuple[str, ...] = SUPPORTED_VERSIONS) -> Rejection | None:
    """Refuse a protocol version this wire does not serve (-32022 with the versions it does)."""
    requested = message["params"]["_meta"][metadata.PROTOCOL_VERSION]
    if is_stateless_version(requested):
        return None
    return reject(message, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                  {"supported": list(supported), "requested": requested})


def check_method(message: dict, methods: frozenset[str] = STATELESS_METHODS) -> Rejection | None:
    """Refuse a method the wire does not serve (-32601, HTTP 404), saying what replaced a removed one."""
    method = message["method"]
    if method in methods:
        return None
    hint = REMOVED_METHODS.get(method)
    text = f"Method not found: {quote(method)} in MCP 2026-07-28" + (f"; {hint}" if hint else "")
    return reject(message, METHOD_NOT_FOUND, text)


def missing_capability(message: object, required: dict[str, Any]) -> Rejection:
    """The -32021 for a request that needs client capabilities it did not declare."""
    names = ", ".join(sorted(required))
    return reject(message, MISSING_REQUIRED_CLIENT_CAPABILITY,
                  f"Server requires the {names} capability for this request; declare it in _meta "
                  f"{metadata.CLIENT_CAPABILITIES}", {"requiredCapabilities": required})


def header_params(input_schema: Mapping[str, Any]) -> tuple[HeaderParam, ...]:
    """Find a tool's x-mcp-header annotations; raise InvalidHeaderAnnotation when one breaks the rules.

    Annotations count only on integer, string or boolean properties reached from the root through `properties`
    alone; one anywhere else (items, oneOf, $defs, ...) makes the whole tool definition invalid.
    """
    found = list(reachable_annotations(input_schema, ()))
    every = sum(1 for _ in all_annotations(input_schema))
    if every != len(found):
        raise InvalidHeaderAnnotation("x-mcp-header is allowed only on properties reached through `properties`")
    params, seen = [], set()
    for path, schema in found:
        params.append(checked_param(path, schema))
        if params[-1].header.lower() in seen:
            raise InvalidHeaderAnnotation(f"x-mcp-header {params[-1].header!r} is used twice (case-insensitively)")
        seen.add(params[-1].header.lower())
    return tuple(params)


def check_header_annotations(tools: Iterable[Any]) -> None:
    """Refuse to start with a tool whose x-mcp-header annotations break the 2026-07-28 rules (server/tools.mdx)."""
    for tool in tools:
        try:
            header_params(tool.input_schema)
        except InvalidHeaderAnnotation as problem:
            raise ValueError(f"tool {tool.name!r}: {problem}") from None


def reachable_annotations(schema: object, path: tuple[str, ...]):
    """Yield (path, property schema) for each annotated property on a `properties`-only chain."""
    if not isinstance(schema, dict):
        return
    if path and "x-mcp-header" in schema:
        yield path, schema
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, child in properties.items():
            yield from reachable_annotations(child, (*path, name))


def all_annotations(node: object):
    """Yield every x-mcp-header keyword in a schema and its subschemas (property names and instances aside)."""
    if isinstance(node, list):
        for item in node:
            yield from all_annotations(item)
    elif isinstance(node, dict):
        for key, child in node.items():
            if key == "x-mcp-header":
                yield child
            elif key in NAME_MAPS and isinstance(child, dict):
                for subschema in child.values():
                    yield from all_annotations(subschema)
            elif key not in DATA_KEYWORDS:
                yield from all_annotations(child)


def checked_param(path: tuple[str, ...], schema: dict) -> HeaderParam:
    """Build one HeaderParam, refusing a bad token or a type other than integer, string or boolean."""
    header = schema["x-mcp-header"]
    where = ".".join(path)
    if not (isinstance(header, str) and TOKEN.fullmatch(header)):
        raise InvalidHeaderAnnotation(f"x-mcp-header on {where!r} must be a non-empty HTTP token")
    declared = schema.get("type")
    types = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    kinds = [t for t in types if t != "null"]
    if len(kinds) != 1 or kinds[0] not in HEADER_TYPES:
        raise InvalidHeaderAnnotation(f"x-mcp-header on {where!r} needs type integer, string or boolean")
    return HeaderParam(header, path, kinds[0])


def argument_at(arguments: object, path: tuple[str, ...]) -> object:
    """The argument value at a `properties` path, or None when any step is absent."""
    value = arguments
    for step in path:
        if not isinstance(value, dict) or step not in value:
            return None
        value = value[step]
    return value


def header_matches(header: str, body: object) -> bool:
    """Compare a decoded Mcp-Param value with the body's: booleans as true/false, numbers numerically."""
    if isinstance(body, bool):
        return header == ("true" if body else "false")
    if isinstance(body, (int, float)):
        if abs(body) > SAFE_INTEGER:
            return False
        try:
            return decimal.Decimal(header) == decimal.Decimal(repr(body))
        except decimal.InvalidOperation:
            return False
    return isinstance(body, str) and header == body


def check_param_headers(message: dict, request_headers: Mapping[str, str],
                        params: tuple[HeaderParam, ...]) -> Rejection | None:
    """Refuse a tools/call whose Mcp-Param-* headers are invalid, missing or unlike its arguments (-32020)."""
    arguments = message.get("params", {}).get("arguments")
    for param in params:
        body = argument_at(arguments, param.path)
        value, problem = header_value(message, request_headers, param.header_name, True)
        if problem is not None:
            return problem
        if body is None:
            if value is not None:
                return reject(message, HEADER_MISMATCH, f"Header mismatch: {param.header_name} header is sent "
                              f"but arguments.{'.'.join(param.path)} is absent")
            continue
        if value is None:
            return missing_header(message, param.header_name, "arguments." + ".".join(param.path))
        if not header_matches(value, body):
            return mismatch(message, param.header_name, value, body)
    return None

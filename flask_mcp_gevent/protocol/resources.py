"""Resources: describe them, match URIs against templates, and read them into contents."""

from __future__ import annotations

import base64
import functools
import logging
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.errors import INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND, RpcError, new_correlation_id
from flask_mcp_gevent.logs import loggable
from flask_mcp_gevent.toolkit.context import ResourceNotFound, ToolError
from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.toolkit.specs import TEMPLATE_VARIABLE, Resource, ResourceTemplate

if TYPE_CHECKING:
    from flask_mcp_gevent.protocol.request_context import RequestContext

__all__ = [
    "describe_resource",
    "describe_template",
    "expand_template",
    "find_readable",
    "may_subscribe",
    "match_template",
    "read_resource",
    "resolved_uri",
    "template_variables",
]

log = logging.getLogger("mcp.resources")
VARIABLE = TEMPLATE_VARIABLE  # one definition: registration checks a reader's parameters against the same names
# RFC 3986 reserved characters, which a {+var} (reserved) expansion leaves as they are.
RESERVED = ":/?#[]@!$&'()*+,;="


def describe(entry: dict[str, Any], spec: Resource | ResourceTemplate) -> dict[str, Any]:
    """Add the optional fields a resource or template has to its list entry."""
    for key, value in (("title", spec.title), ("description", spec.description), ("mimeType", spec.mime_type)):
        if value:
            entry[key] = value
    return entry


def describe_resource(resource: Resource) -> dict[str, Any]:
    """The resources/list entry for a resource."""
    return describe({"uri": resource.uri, "name": resource.name}, resource)


def describe_template(template: ResourceTemplate) -> dict[str, Any]:
    """The resources/templates/list entry for a template."""
    return describe({"uriTemplate": template.uri_template, "name": template.name}, template)


def template_variables(uri_template: str) -> list[str]:
    """The variable names of a URI template, in order."""
    return [name for _, name in VARIABLE.findall(uri_template)]


@functools.lru_cache(maxsize=256)
def template_pattern(uri_template: str) -> re.Pattern[str]:
    """Compile a template once: {var} matches one path segment, {+var} (reserved) matches the rest."""
    pattern, position = "", 0
    for match in VARIABLE.finditer(uri_template):
        pattern += re.escape(uri_template[position : match.start()])
        reserved, name = match.groups()
        pattern += f"(?P<{name}>.+)" if reserved else f"(?P<{name}>[^/?#]+)"
        position = match.end()
    pattern += re.escape(uri_template[position:])
    return re.compile(f"^{pattern}$")


def match_template(uri_template: str, uri: str) -> dict[str, str] | None:
    """Return the template's variables if uri matches it, else None."""
    match = template_pattern(uri_template).match(uri)
    if match is None:
        return None
    return {name: unquote(value) for name, value in match.groupdict().items()}


def expand_template(uri_template: str, variables: dict[str, str]) -> str:
    """The URI a template names with these variables (RFC 6570 levels 1 and 2); a missing one expands empty.

    A `%` is always encoded, so that match_template's decoding gives the value back.
    """

    def expand(match: re.Match[str]) -> str:
        reserved, name = match.groups()
        return quote(str(variables.get(name, "")), safe=RESERVED if reserved else "")

    return VARIABLE.sub(expand, uri_template)


def to_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """Turn what a reader returned into resource contents: str as text, bytes as a base64 blob."""
    if isinstance(value, list):
        return [{"uri": uri, **item} if "uri" not in item else item for item in value]
    entry: dict[str, Any] = {"uri": uri}
    if mime_type:
        entry["mimeType"] = mime_type
    if isinstance(value, (bytes, bytearray)):
        entry["blob"] = base64.b64encode(bytes(value)).decode("ascii")
    elif isinstance(value, dict) and ("text" in value or "blob" in value):
        entry.update(value)
        if isinstance(entry.get("blob"), (bytes, bytearray)):
            entry["blob"] = base64.b64encode(bytes(entry["blob"])).decode("ascii")
    elif isinstance(value, dict):  # any other dict is the resource's data: JSON, not Python's repr
        entry["text"] = dumps(value).decode()
        entry.setdefault("mimeType", "application/json")
    else:
        entry["text"] = value if isinstance(value, str) else str(value)
    return [entry]


def not_found(uri: str) -> RpcError:
    """The -32002 for a URI nobody serves."""
    return RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})


def call_reader(fn: Any, wants_context: bool, ctx: RequestContext, uri: str, kwargs: dict[str, str]) -> Any:
    """Call a resource reader, turning its failures into protocol errors without internals."""
    arguments: dict[str, Any] = {**kwargs, "ctx": ctx} if wants_context else kwargs
    try:
        return fn(**arguments)
    except ResourceNotFound:
        raise not_found(uri) from None
    except ToolError as refusal:
        raise RpcError(INVALID_PARAMS, str(refusal), {"uri": uri}) from None
    except RpcError:
        raise
    except Exception:
        correlation_id = new_correlation_id()
        log.exception("reading %s failed (correlation id %s)", loggable(uri), correlation_id)
        raise RpcError(INTERNAL_ERROR, "Internal error while reading the resource",
                       {"uri": uri, "correlationId": correlation_id}) from None


def find_reader(registry: Registry, uri: str) -> tuple[Resource | ResourceTemplate, dict[str, str]] | None:
    """Find the resource or template that serves uri: exact URIs first, then templates in order."""
    resource = registry.resources.get(uri)
    if resource is not None:
        return resource, {}
    for template in registry.templates.values():
        variables = match_template(template.uri_template, uri)
        if variables is not None:
            return template, variables
    return None


def resolved_uri(template: ResourceTemplate, ctx: RequestContext, uri: str, variables: dict[str, str]) -> str:
    """The URI of what uri really names, by the template's resolve hook (uri itself without one)."""
    if template.resolve is None:
        return uri
    names = template_variables(template.uri_template)
    resolved = call_reader(template.resolve, True, ctx, uri, {name: variables.get(name, "") for name in names})
    return expand_template(template.uri_template, {**variables, **resolved})


def find_readable(ctx: RequestContext, uri: str) -> tuple[Resource | ResourceTemplate, dict[str, str]]:
    """What serves uri, once the principal may read both uri and what it really names; -32001 or -32002 if not."""
    # Permission first, so a principal cannot tell a hidden resource from a missing one.
    ctx.require("resource", uri)
    found = find_reader(ctx.registry, uri)
    if found is None:
        raise not_found(uri)
    reader, variables = found
    if isinstance(reader, ResourceTemplate):
        real = resolved_uri(reader, ctx, uri, variables)
        if real != uri:
            ctx.require("resource", uri, target=real)
    return reader, variables


def may_subscribe(ctx: RequestContext, uri: str) -> bool:
    """Whether the caller may follow uri in a listen's resourceSubscriptions: as for resources/subscribe, it needs
    permission on uri and on what uri really names (a link's target); a URI nothing serves yet needs the first only."""
    if not ctx.permits("resource", uri):
        return False
    found = find_reader(ctx.registry, uri) if ctx.checks_permissions else None
    if found is None or not isinstance(found[0], ResourceTemplate):
        return True
    try:
        real = resolved_uri(found[0], ctx, uri, found[1])
    except RpcError:
        return False  # resources/subscribe would refuse it (a `..`, outside the root): not honoured either
    return real == uri or ctx.permits("resource", real)


def read_resource(registry: Registry, ctx: RequestContext, uri: Any) -> dict[str, Any]:
    """Read uri and return the resources/read result; -32002 when nothing serves it."""
    if not isinstance(uri, str) or not uri:
        raise RpcError(INVALID_PARAMS, "Invalid params: 'uri' must be a non-empty string")
    reader, variables = find_readable(ctx, uri)
    value = call_reader(reader.fn, reader.wants_context, ctx, uri, variables)
    return {"contents": to_contents(uri, value, reader.mime_type)}

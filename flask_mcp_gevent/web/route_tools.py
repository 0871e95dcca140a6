"""A host app's existing Flask route as an MCP tool (`MCP.expose_route`).

The route's URL variables become properties with their converters' types; on POST, PUT and PATCH the JSON body,
described by body_schema, is the property `body`, and the query parameters, described by query_schema, the property
`query` (kept apart, so a URL variable, a body field and a query parameter may share a name). A call is one request
through the whole app, as a browser's would be: its WSGI middleware, before_request hooks, own authentication, view,
error handlers and after_request hooks, in request and application contexts of its own. It is sent only when its
URL resolves to the exposed endpoint with the arguments given (web/route_checks.py). It carries the MCP caller's
credentials and no client address (REMOTE_ADDR is empty: an internal call must not pass for a local one). A JSON
answer becomes structuredContent, any other its text; a status of 300 or more is an isError result naming the
status (redirects are not followed).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from flask import Flask
from flask.testing import EnvironBuilder
from werkzeug.datastructures import MultiDict
from werkzeug.routing import (
    AnyConverter,
    BaseConverter,
    BuildError,
    FloatConverter,
    IntegerConverter,
    PathConverter,
    Rule,
    UUIDConverter,
)
from werkzeug.wrappers import Response

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.toolkit.checks import RegistryError
from flask_mcp_gevent.toolkit.checks import where as place_of
from flask_mcp_gevent.toolkit.content import ToolResult, text
from flask_mcp_gevent.toolkit.context import ToolError
from flask_mcp_gevent.toolkit.specs import Tool, spec_of, tool
from flask_mcp_gevent.web.route_checks import check_query, check_resolves, check_variables, query_pairs

__all__ = ["BODY", "QUERY", "route_tool"]

# The property that holds a POST, PUT or PATCH request's JSON body.
BODY = "body"
# The property that holds the query string's parameters, when expose_route was given a query_schema.
QUERY = "query"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
ANNOTATIONS_BY_METHOD: dict[str, dict[str, Any]] = {
    "GET": {"readOnlyHint": True},
    "DELETE": {"destructiveHint": True},
    "PUT": {"idempotentHint": True},
}
UUID_PATTERN = "^[A-Fa-f0-9]{8}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{12}$"
# How much of an error answer's body the model sees.
ERROR_EXCERPT_CHARS = 2000


def variable_schema(name: str, converter: BaseConverter) -> dict[str, Any]:
    """The JSON Schema of one URL variable, from its converter."""
    schema: dict[str, Any]
    if isinstance(converter, IntegerConverter | FloatConverter):
        schema = {"type": "integer" if isinstance(converter, IntegerConverter) else "number"}
        if not converter.signed:
            schema["minimum"] = 0
        if converter.min is not None:
            schema["minimum"] = converter.min
        if converter.max is not None:
            schema["maximum"] = converter.max
    elif isinstance(converter, UUIDConverter):
        schema = {"type": "string", "format": "uuid", "pattern": UUID_PATTERN}
    elif isinstance(converter, AnyConverter):
        schema = {"type": "string", "enum": sorted(converter.items)}
    elif isinstance(converter, PathConverter):
        schema = {"type": "string", "minLength": 1}
    else:  # string, or a converter of the host's own: text of one path segment
        schema = {"type": "string", "minLength": 1, "pattern": "^[^/]+$"}
    return {**schema, "description": f"The URL variable <{name}>."}


def rule_of(app: Flask, endpoint: str, method: str | None) -> tuple[Rule, str]:
    """The endpoint's URL rule and the method the tool calls it with; RegistryError when there is no one answer."""
    rules = list(app.url_map.iter_rules(endpoint)) if endpoint in app.view_functions else []
    if not rules:
        raise RegistryError(f"expose_route({endpoint!r}): the app has no such endpoint (register its route, or its "
                            "blueprint, before exposing it)")
    rule = rules[0]
    methods = sorted((rule.methods or set()) - {"HEAD", "OPTIONS"})
    if method is not None:
        if method.upper() not in methods:
            raise RegistryError(f"expose_route({endpoint!r}): its route takes {', '.join(methods)}, not {method}")
        return rule, method.upper()
    if len(methods) != 1:
        raise RegistryError(f"expose_route({endpoint!r}): its route takes {', '.join(methods)}; "
                            "choose one with method='...'")
    return rule, methods[0]


def input_schema(rule: Rule, method: str, endpoint: str, body_schema: dict[str, Any] | None,
                 query_schema: dict[str, Any] | None) -> dict[str, Any]:
    """The tool's input schema: one property per URL variable, plus `body` and `query` when the route takes them."""
    variables = sorted(rule.arguments - set(rule.defaults or {}))
    properties = {name: variable_schema(name, rule._converters[name]) for name in variables}
    required = list(variables)
    if body_schema is not None:
        if method not in BODY_METHODS:
            raise RegistryError(f"expose_route({endpoint!r}): a {method} request sends no body; drop body_schema")
        properties[BODY] = described(body_schema, BODY, endpoint, "The request's JSON body.", properties)
        required.append(BODY)
    if query_schema is not None:
        if not isinstance(query_schema, dict) or query_schema.get("type") != "object" \
                or not isinstance(query_schema.get("properties", {}), dict):
            raise RegistryError(f"expose_route({endpoint!r}): query_schema must be an object schema, as "
                                "{'type': 'object', 'properties': {'page': {'type': 'integer'}}}: its properties "
                                "are the query parameters")
        properties[QUERY] = described(query_schema, QUERY, endpoint, "The URL's query parameters (a list repeats "
                                      "one).", properties)
        if query_schema.get("required"):
            required.append(QUERY)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def described(schema: dict[str, Any], name: str, endpoint: str, description: str,
              properties: dict[str, Any]) -> dict[str, Any]:
    """schema as the property name, with a description; RegistryError when a URL variable has that name."""
    if name in properties:
        raise RegistryError(f"expose_route({endpoint!r}): a URL variable is named {name!r}, which the "
                            f"{'body' if name == BODY else 'query string'} takes")
    return {"description": description, **schema}


def route_tool(app: Flask, endpoint: str, credentials: Callable[[Any], dict[str, str]],
               name: str | None = None, description: str | None = None, body_schema: dict[str, Any] | None = None,
               method: str | None = None, query_schema: dict[str, Any] | None = None) -> Tool:
    """The tool that calls endpoint on app as the MCP caller; credentials(ctx) gives the headers to send."""
    rule, method = rule_of(app, endpoint, method)
    schema = input_schema(rule, method, endpoint, body_schema, query_schema)
    view_doc = (app.view_functions[endpoint].__doc__ or "").strip()
    summary = description if description is not None else (view_doc.splitlines()[0] if view_doc else "")
    tool_name = name or endpoint

    def call_route(ctx: Any, **arguments: Any) -> Any:
        # Popped only when declared: without a body_schema or a query_schema, a URL variable may have its name.
        body = arguments.pop(BODY, None) if body_schema is not None else None
        query = arguments.pop(QUERY, {}) if query_schema is not None else {}
        check_variables(tool_name, rule, arguments)
        check_query(tool_name, query)
        try:
            path = app.url_map.bind("localhost").build(endpoint, arguments, method=method)
        except BuildError:
            raise ToolError(f"Tool '{tool_name}': these URL variables make no URL of {rule.rule}") from None
        try:
            environ = internal_environ(app, method, path, query_pairs(query), body, credentials(ctx))
        except ValueError as problem:  # a host variable werkzeug reads as a port ('x:80'), a header with a newline
            raise ToolError(f"Tool '{tool_name}' refused {method} {path}: no request can be made of it ({problem}); "
                            "nothing was sent to the app") from None
        # The request context would reuse an app context of the same app already pushed (the MCP request's, the
        # tool call's), sharing its g and skipping teardown_appcontext: this one is the internal request's alone.
        with app.app_context():
            check_resolves(app, environ, rule, method, arguments, tool_name)
            response = Response.from_app(app, environ, buffered=True)
        return tool_result(method, path, response)

    call_route.__name__ = call_route.__qualname__ = tool_name.replace(".", "_").replace("-", "_")
    call_route.__doc__ = summary or f"{method} {rule.rule}"
    # Registration errors (a duplicate name) then name the route, not this module.
    call_route.__mcp_where__ = (  # type: ignore[attr-defined]
        f"expose_route({endpoint!r}) of the view at {place_of(app.view_functions[endpoint])}")
    tool(tool_name, input_schema=schema, description=call_route.__doc__,
         annotations=dict(ANNOTATIONS_BY_METHOD.get(method, {})))(call_route)
    spec = spec_of(call_route)
    assert isinstance(spec, Tool)
    return spec


def internal_environ(app: Flask, method: str, path: str, query: list[tuple[str, str]], body: Any,
                     headers: dict[str, str]) -> dict[str, Any]:
    """The WSGI environ of one internal request, with no client address (it must not pass for a local one)."""
    builder = EnvironBuilder(app, path=path, method=method, headers=headers, query_string=MultiDict(query),
                             environ_base={"REMOTE_ADDR": ""}, **({"json": body} if body is not None else {}))
    try:
        return builder.get_environ()
    finally:
        builder.close()


def tool_result(method: str, path: str, response: Response) -> Any:
    """A route's answer as a tool result: JSON as structured content, a failure status as isError."""
    value = response.get_json(silent=True) if response.is_json else None
    if response.status_code < HTTPStatus.MULTIPLE_CHOICES:
        return value if value is not None else response.get_data(as_text=True)
    status = str(response.status_code)
    with contextlib.suppress(ValueError):  # a status no RFC names keeps its bare number
        status += " " + HTTPStatus(response.status_code).phrase
    detail = dumps(value).decode() if value is not None else response.get_data(as_text=True)
    where = f", to {response.headers['Location']}" if "Location" in response.headers else ""
    message = f"{method} {path} answered HTTP {status}{where}: {detail[:ERROR_EXCERPT_CHARS]}"
    return ToolResult(content=[text(message)], structured={"status": response.status_code, "body": value}
                      if isinstance(value, dict | list) else {"status": response.status_code}, is_error=True)

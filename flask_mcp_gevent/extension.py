"""`MCP`: add an MCP server to the Flask app you already have, or build the template's app with it.

    mcp = MCP(app)                     # or mcp = MCP(); mcp.init_app(app) inside a factory

    @mcp.tool
    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        return a + b

An MCP object holds what its decorators declare (its `registry`); each app it is given gets its own server
(app.extensions["mcp"], a web.flask_extension.McpExtension: a server with a copy of those declarations,
the routes under `path`), so two apps in one process serve their own tools. A declaration made after
init_app reaches the apps already served at once.

Settings, strongest first: `settings=` given here, then the app's `MCP_*` config keys (app.config["MCP_PAGE_SIZE"]),
then the `MCP_*` environment variables, then each setting's default.
"""

from __future__ import annotations

import dataclasses
import importlib
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flask import Flask

from flask_mcp_gevent.config import PREFIX as SETTING_PREFIX
from flask_mcp_gevent.config import ConfigError, Settings, current_field_name, read_setting
from flask_mcp_gevent.serving.cli import mcp_cli
from flask_mcp_gevent.stateless.validation import InvalidHeaderAnnotation, header_params
from flask_mcp_gevent.toolkit.checks import RegistryError
from flask_mcp_gevent.toolkit.registry import Registry
from flask_mcp_gevent.toolkit.specs import (
    TEMPLATE_VARIABLE,
    Completer,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    Tool,
    prompt,
    resource,
    resource_template,
    spec_of,
    tool,
)
from flask_mcp_gevent.web.callers import credential_keys
from flask_mcp_gevent.web.flask_extension import McpExtension
from flask_mcp_gevent.web.route_tools import route_tool

__all__ = ["MCP"]

Spec = Tool | Resource | ResourceTemplate | Prompt
Decorated = Callable[..., Any]


class MCP:
    """An MCP server on a Flask app: the decorators, the principal loader, routes made tools."""

    def __init__(self, app: Flask | None = None, path: str = "/mcp",
                 settings: Settings | Mapping[str, Any] | None = None, *, registry: Registry | None = None,
                 whole_app: bool = False, forward_headers: Iterable[str] = ()) -> None:
        """Serve MCP at path; settings are MCP_* names without the prefix, lower case, over app.config and the
        environment.

        registry: declarations to start from (the template passes its mcp_tools/ ones; a host's start empty).
        whole_app: the app is all MCP, as the template's: console at /, /healthz, JSON errors everywhere.
        forward_headers: the headers besides Authorization and Cookie that the app's own login reads (X-Api-Key):
        a principal_loader's caller passes them on to the routes made tools.
        """
        if not path.startswith("/") or path == "/" or path.endswith("/"):
            raise ConfigError(f"MCP(path={path!r}): the path must start with '/' and name a sub-path, as '/mcp'")
        self.path = path
        self.settings = settings
        self.registry = registry if registry is not None else Registry()
        self.whole_app = whole_app
        self.forward_headers = tuple(forward_headers)
        credential_keys(self.forward_headers)  # checked now: a bad header name stops the start
        self.loader: Callable[[Any], Any] | None = None
        self.routes: list[dict[str, Any]] = []
        self.servers: weakref.WeakSet[McpExtension] = weakref.WeakSet()
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Serve this object's declarations on app, with its own server (app.extensions["mcp"])."""
        if not isinstance(app, Flask):  # a Blueprint has no config, extensions or CLI of its own to serve from
            raise ConfigError(f"MCP(app): {app!r} is not a Flask app; give MCP the app itself (MCP(app) or "
                              "mcp.init_app(app)), with path= for where it serves")
        settings = self.settings_for(app)
        server = McpExtension(settings=settings, registry=self.registry_for(settings), path=self.path,
                              whole_app=self.whole_app, forward_headers=self.forward_headers)
        server.init_app(app)
        app.cli.add_command(mcp_cli)  # flask mcp tools | call | stdio | serve
        self.servers.add(server)
        if self.loader is not None:
            server.use_loader(self.loader)
        for route in self.routes:
            expose_on(server, route)

    def settings_for(self, app: Flask) -> Settings:
        """The settings this app's server runs with: settings= over the app's MCP_* config over the environment."""
        if isinstance(self.settings, Settings):
            return self.settings
        return settings_from({**config_settings(app.config), **dict(self.settings or {})})

    def registry_for(self, settings: Settings) -> Registry:
        """A registry for one app: this object's declarations, plus the MCP_PLUGINS modules."""
        registry = Registry()
        for table in (self.registry.tools, self.registry.resources, self.registry.templates, self.registry.prompts):
            for spec in table.values():
                registry.declare(spec)
        for module in settings.plugins:
            registry.add_module(importlib.import_module(module))
        return registry

    # declarations
    def declare(self, spec: Spec) -> None:
        """Add a spec to this object's registry and to every app's it serves."""
        if isinstance(spec, Tool):
            check_headers(spec)
        self.registry.declare(spec)
        for server in list(self.servers):
            server.server.registry.declare(spec)  # type: ignore[union-attr]

    def tool(self, fn: Decorated | None = None, /, *, name: str | None = None,
             input_schema: dict[str, Any] | None = None, description: str | None = None,
             output_schema: dict[str, Any] | None = None, title: str | None = None,
             annotations: dict[str, Any] | None = None, task: str | None = None,
             ask_before_task: bool = False) -> Any:
        """Declare a tool, as the toolkit's @tool: schemas from the hints unless input_schema/output_schema say."""

        def declare(fn: Decorated) -> Decorated:
            tool(name, input_schema=input_schema, description=description, output_schema=output_schema, title=title,
                 annotations=annotations, task=task, ask_before_task=ask_before_task)(fn)
            self.declare(spec_of(fn))
            return fn

        return declare if fn is None else declare(fn)

    def resource(self, uri: str, *, name: str | None = None, description: str | None = None,
                 mime_type: str | None = None, title: str | None = None, complete: Completer | None = None,
                 resolve: Callable[..., dict[str, str]] | None = None) -> Callable[[Decorated], Decorated]:
        """Declare the reader of a resource: a fixed URI, or a template with {variables} its parameters take."""
        if callable(uri):
            raise RegistryError("use @mcp.resource('scheme://uri'), not bare @mcp.resource")
        templated = TEMPLATE_VARIABLE.search(uri) is not None
        if not templated and (complete is not None or resolve is not None):
            raise RegistryError(f"@mcp.resource({uri!r}): complete= and resolve= are for a URI with {{variables}}")

        def declare(fn: Decorated) -> Decorated:
            if templated:
                resource_template(uri, name=name, description=description, mime_type=mime_type, title=title,
                                  complete=complete, resolve=resolve)(fn)
            else:
                resource(uri, name=name, description=description, mime_type=mime_type, title=title)(fn)
            self.declare(spec_of(fn))
            return fn

        return declare

    def prompt(self, fn: Decorated | None = None, /, *, name: str | None = None, description: str | None = None,
               title: str | None = None, arguments: list[PromptArgument] | None = None,
               complete: Completer | None = None) -> Any:
        """Declare a prompt, as the toolkit's @prompt: its arguments are its parameters unless arguments= says."""

        def declare(fn: Decorated) -> Decorated:
            prompt(name, arguments=arguments, description=description, title=title, complete=complete)(fn)
            self.declare(spec_of(fn))
            return fn

        return declare if fn is None else declare(fn)

    def principal_loader(self, fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """Declare who an HTTP caller is: fn(request) returns an API-keys-like entry (every field), or None for 401."""
        self.loader = fn
        for server in list(self.servers):
            server.use_loader(fn)
        return fn

    def expose_route(self, endpoint: str, name: str | None = None, description: str | None = None,
                     body_schema: dict[str, Any] | None = None, *, method: str | None = None,
                     query_schema: dict[str, Any] | None = None) -> None:
        """Make an existing route a tool, called through the whole app as the MCP caller (web/route_tools.py)."""
        route = {"endpoint": endpoint, "name": name, "description": description, "body_schema": body_schema,
                 "method": method, "query_schema": query_schema}
        for server in list(self.servers):
            expose_on(server, route)
        self.routes.append(route)  # after the apps served took it: a refused route is not kept for the next one


def expose_on(server: McpExtension, route: dict[str, Any]) -> None:
    """Declare a route's tool on one app's server; each call sends the host the credentials its caller carried."""
    assert server.app is not None and server.server is not None
    spec = route_tool(server.app, credentials=caller_credentials, **route)
    check_headers(spec)
    server.server.registry.declare(spec)
    server.add_route_tool(spec.name)


def caller_credentials(ctx: Any) -> dict[str, str]:
    """The host's own credential headers the call's request carried (a principal loader's caller only)."""
    caller = ctx.caller
    return dict(caller.credentials) if caller is not None else {}


def check_headers(spec: Tool) -> None:
    """Refuse a tool whose x-mcp-header annotations break the 2026-07-28 rules, as the server does at start."""
    try:
        header_params(spec.input_schema)
    except InvalidHeaderAnnotation as problem:
        raise RegistryError(f"tool {spec.name!r}: {problem}") from None


def settings_from(values: Mapping[str, Any]) -> Settings:
    """Settings from {name: value} (MCP_* names without the prefix, lower case) over the environment."""
    known = {field.name for field in dataclasses.fields(Settings)} - {"extra"}
    values = {current_field_name(name): value for name, value in values.items()}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"MCP(settings=...): unknown setting(s) {', '.join(unknown)}; the names are the MCP_* "
                          "variables without the prefix, in lower case (page_size for MCP_PAGE_SIZE)")
    types = {field.name: field.type for field in dataclasses.fields(Settings)}
    overrides = {name: read_setting(f"MCP(settings=...): {name}", value, types[name])
                 for name, value in values.items()}
    return Settings.from_environ(None, **overrides)


def config_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings an app's config gives by their MCP_* keys, as settings= names them; text is read as the
    environment's is. Other MCP_* keys (a tool's own) are left to the tool."""
    fields = {field.name: field for field in dataclasses.fields(Settings) if field.name != "extra"}
    found: dict[str, Any] = {}
    for key, value in config.items():
        name = current_field_name(key[len(SETTING_PREFIX):].lower()) if key.startswith(SETTING_PREFIX) else ""
        if name in fields:
            found[name] = read_setting(key, value, fields[name].type)
    return found

"""Routes made tools send nothing more than what was exposed (flask_mcp_gevent/web/route_tools.py, route_checks.py).

A small host app of this file's own has an exposed `/files/<path:name>` with unexposed views beside and below it,
and WSGI middleware that resolves dot segments as some proxies do. These tests check that a URL variable cannot
reach another view, that the internal request has contexts of its own, that URL variables take their converters'
types only, that query parameters reach a view, and that the credentials come from the call's context.
"""

from __future__ import annotations

import json
import posixpath
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask, current_app, g, jsonify, request
from flask.testing import FlaskClient
from werkzeug.routing import BaseConverter

from flask_mcp_gevent import MCP
from flask_mcp_gevent.toolkit.checks import RegistryError
from flask_mcp_gevent.toolkit.context import ToolError
from flask_mcp_gevent.web.route_tools import route_tool

SESSION_VERSION = "2025-06-18"
STATELESS_VERSION = "2026-07-28"
SEARCH_QUERY_SCHEMA = {
    "type": "object",
    "properties": {"scope": {"type": "string"}, "tag": {"type": "array", "items": {"type": "string"}},
                   "page": {"type": "integer"}, "exact": {"type": "boolean"}},
    "additionalProperties": False,
}


class DotSegmentResolver:
    """WSGI middleware that resolves '.' and '..' in PATH_INFO, as some proxies and frameworks do."""

    def __init__(self, wsgi_app: Any) -> None:
        self.wsgi_app = wsgi_app

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        """Pass the request on with its path resolved."""
        environ["PATH_INFO"] = posixpath.normpath(environ["PATH_INFO"])
        return self.wsgi_app(environ, start_response)


def create_host() -> Flask:
    """The host app: what each view ran is counted in app.extensions["runs"], its teardowns in ["teardowns"]."""
    app = Flask(__name__)
    runs: Counter[str] = Counter()
    teardowns: list[tuple[str, list[str] | None]] = []
    app.extensions.update(runs=runs, teardowns=teardowns)
    app.wsgi_app = DotSegmentResolver(app.wsgi_app)  # type: ignore[method-assign]

    @app.before_request
    def mark_the_request() -> None:
        """Every request adds its path to g's: a g shared between requests names them all."""
        g.paths = [*g.get("paths", []), request.path]

    @app.get("/files/<path:name>")
    def read_file(name: str) -> Any:
        """Read a file of the shop's."""
        runs["read_file"] += 1
        return jsonify(name=name)

    @app.get("/files/_internal/reindex")
    def reindex_files() -> str:
        """An internal view below the exposed one."""
        runs["reindex"] += 1
        return "reindexed"

    @app.get("/_internal/reindex")
    def reindex() -> str:
        """An internal view a '..' would reach."""
        runs["reindex"] += 1
        return "reindexed"

    @app.get("/shelves/<shelf>/items/<int(min=1):item_id>")
    def shelf_item(shelf: str, item_id: int) -> Any:
        """One item of a shelf."""
        runs["shelf_item"] += 1
        return jsonify(shelf=shelf, item_id=item_id)

    @app.get("/weights/<float:weight>")
    def weigh(weight: float) -> Any:
        """Echo a weight."""
        runs["weigh"] += 1
        return jsonify(weight=weight)

    @app.get("/copy/<path:source>/to/<path:target>")
    def copy(source: str, target: str) -> Any:
        """Echo a source and a target."""
        runs["copy"] += 1
        return jsonify(source=source, target=target)

    @app.get("/search/<scope>")
    def search(scope: str) -> Any:
        """Search within a scope, as the query string says."""
        return jsonify(scope=scope, args=request.args.to_dict(flat=False))

    @app.get("/context")
    def context_view() -> Any:
        """Say what this request's g holds, then leave a mark in it."""
        seen = {name: getattr(g, name) for name in ("paths", "outer") if name in g}
        g.from_view = True
        return jsonify(seen)

    @app.teardown_request
    def record_request_teardown(error: BaseException | None) -> None:
        teardowns.append(("request", g.get("paths")))

    @app.teardown_appcontext
    def record_appcontext_teardown(error: BaseException | None) -> None:
        teardowns.append(("appcontext", g.get("paths")))

    mcp = MCP(app)
    for endpoint in ("read_file", "shelf_item", "weigh", "copy", "context_view"):
        mcp.expose_route(endpoint)
    mcp.expose_route("search", query_schema=SEARCH_QUERY_SCHEMA)
    return app


@pytest.fixture
def app():
    host = create_host()
    yield host
    host.extensions["mcp"].shutdown()


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def runs(app: Flask) -> Counter[str]:
    return app.extensions["runs"]


class McpSession:
    """A Streamable HTTP session over Flask's test client (authentication off: an anonymous caller)."""

    def __init__(self, client: FlaskClient) -> None:
        self.client = client
        self.headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                        "MCP-Protocol-Version": SESSION_VERSION}
        self.post("initialize", {"protocolVersion": SESSION_VERSION, "capabilities": {},
                                 "clientInfo": {"name": "test", "version": "1"}})
        self.headers["Mcp-Session-Id"] = self.session_id

    def post(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request; return its JSON-RPC answer."""
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        response = self.client.post("/mcp", headers=self.headers, data=json.dumps(body))
        self.session_id = response.headers.get("Mcp-Session-Id", "")
        return response.get_json()

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """tools/call: the result (or the error)."""
        answer = self.post("tools/call", {"name": name, "arguments": arguments})
        return answer.get("result") or answer["error"]


def stateless_call(client: FlaskClient, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """tools/call on the 2026-07-28 wire: one POST, no session."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": STATELESS_VERSION,
               "Mcp-Method": "tools/call", "Mcp-Name": name}
    params = {"name": name, "arguments": arguments,
              "_meta": {"io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                        "io.modelcontextprotocol/clientCapabilities": {}}}
    answer = client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                        "params": params}).get_json()
    return answer.get("result") or answer["error"]


def call_directly(app: Flask, endpoint: str, arguments: dict[str, Any], **exposed: Any) -> Any:
    """Call the route tool's function as tools/call would, past the schema validation."""
    spec = route_tool(app, endpoint, credentials=lambda ctx: {}, **exposed)
    return spec.fn(SimpleNamespace(principal=None), **arguments)


def refusal_text(result: dict[str, Any]) -> str:
    """The text of an isError result."""
    assert result["isError"] is True, result
    return result["content"][0]["text"]


# the <path:> attack
def test_a_dot_dot_path_variable_is_refused_and_the_view_it_would_reach_never_runs(app, client, runs):
    assert client.get("/files/../_internal/reindex").get_data(as_text=True) == "reindexed"  # the middleware's doing
    assert runs["reindex"] == 1
    refused = refusal_text(McpSession(client).call("read_file", {"name": "../_internal/reindex"}))
    assert "/name: '../_internal/reindex' has a '..' path segment" in refused and "nothing was sent" in refused
    assert runs["reindex"] == 1 and runs["read_file"] == 0


def test_a_path_variable_that_reaches_an_unexposed_view_below_is_refused(client, runs):
    for call in (McpSession(client).call, lambda name, arguments: stateless_call(client, name, arguments)):
        refused = refusal_text(call("read_file", {"name": "_internal/reindex"}))
        assert refused.startswith("Tool 'read_file' refused GET /files/_internal/reindex: it reaches another route")
        assert "reindex_files" not in refused  # the other view's endpoint stays unnamed
    assert runs["reindex"] == 0 and runs["read_file"] == 0


@pytest.mark.parametrize(("name", "problem"), [
    ("a/./b", "has a '.' path segment"),
    ("..", "has a '..' path segment"),
    ("a//b", "has an empty path segment"),
    ("a/", "has an empty path segment"),
    ("a\\..\\b", "has a backslash"),
    ("a%2Fb", "has a percent-encoded"),
    ("%2e%2e/_internal/reindex", "has a percent-encoded"),
    ("%252e%252e/_internal/reindex", "has a percent-encoded '/', '\\' or '.' once percent-decoded"),
    ("a\x00b", "has a control character"),
    ("a\nb", "has a control character"),
])
def test_a_path_variable_that_would_change_the_paths_meaning_is_refused(client, runs, name, problem):
    refused = refusal_text(McpSession(client).call("read_file", {"name": name}))
    assert refused.startswith("Invalid arguments for tool 'read_file': /name:") and problem in refused
    assert runs == Counter()


@pytest.mark.parametrize("shelf", ["a/b", "..", ".", "a%2Fb", "a\\b", "a\tb"])
def test_a_one_segment_variable_takes_no_separator_even_past_the_schema(app, runs, shelf):
    with pytest.raises(ToolError, match="^Invalid arguments for tool 'shelf_item': /shelf: "):
        call_directly(app, "shelf_item", {"shelf": shelf, "item_id": 1})
    assert runs == Counter()


def test_an_ordinary_path_variable_reaches_the_view_as_given(client, runs):
    answer = McpSession(client).call("read_file", {"name": "notes/2024 report, v1.2 (final)?.txt"})
    assert answer["structuredContent"] == {"name": "notes/2024 report, v1.2 (final)?.txt"}
    assert runs["read_file"] == 1


def test_variables_the_url_would_hand_the_view_otherwise_are_refused(client, runs):
    # /copy/a/to/b/to/c matches source="a", target="b/to/c": the route, but not these arguments.
    refused = refusal_text(McpSession(client).call("copy", {"source": "a/to/b", "target": "c"}))
    assert "refused GET /copy/a/to/b/to/c: it reaches /copy/<path:source>/to/<path:target> with other URL" in refused
    assert runs["copy"] == 0
    answer = McpSession(client).call("copy", {"source": "a/b", "target": "c/d"})
    assert answer["structuredContent"] == {"source": "a/b", "target": "c/d"}


@pytest.mark.parametrize("tenant", ["x:80", "[::1]"])
def test_a_host_variable_that_makes_no_url_is_refused_naming_the_url(tenant):
    app = Flask(__name__, host_matching=True, static_host="static.example")
    runs: Counter[str] = Counter()

    @app.get("/item", host="<tenant>.shop.example")
    def item(tenant: str) -> Any:
        runs["item"] += 1
        return {"tenant": tenant}

    assert call_directly(app, "item", {"tenant": "acme"}) == {"tenant": "acme"}
    # A ':' or '[' in the host is a port or an address to the URL parser: no request can be made of it.
    with pytest.raises(ToolError, match=r"^Tool 'item' refused GET http://.*\.shop\.example/item: no request can be "
                                        r"made of it \(.*\); nothing was sent to the app$"):
        call_directly(app, "item", {"tenant": tenant})
    assert runs["item"] == 1


def test_a_hosts_own_converter_may_load_an_object_in_the_app_context():
    class Shelf:
        """A model a converter loads: a new object each time, equal to none other."""

        def __init__(self, name: str) -> None:
            self.name = name

    class ShelfConverter(BaseConverter):
        def to_python(self, value: str) -> Shelf:
            return Shelf(f"{current_app.name}:{value}")  # needs the app context, as a database lookup would

        def to_url(self, value: Any) -> str:
            return super().to_url(value.name if isinstance(value, Shelf) else value)

    app = Flask("shop")
    app.url_map.converters["shelf"] = ShelfConverter

    @app.get("/shelves/<shelf:shelf>")
    def show_shelf(shelf: Shelf) -> Any:
        return {"shelf": shelf.name}

    assert call_directly(app, "show_shelf", {"shelf": "top"}) == {"shelf": "shop:top"}


# contexts of its own
@pytest.mark.parametrize("call", ["session", "stateless"])
def test_the_route_sees_its_own_g_and_its_teardowns_run(app, client, call):
    result = (McpSession(client).call("context_view", {}) if call == "session"
              else stateless_call(client, "context_view", {}))
    assert result["structuredContent"] == {"paths": ["/context"]}  # not the MCP request's g, which holds "/mcp"
    teardowns = app.extensions["teardowns"]
    assert ("request", ["/context"]) in teardowns and ("appcontext", ["/context"]) in teardowns


def test_g_does_not_cross_into_or_out_of_the_internal_request_under_an_outer_app_context(app):
    teardowns = app.extensions["teardowns"]
    with app.app_context():
        g.outer = "the tool call's"
        assert call_directly(app, "context_view", {}) == {"paths": ["/context"]}
        assert g.outer == "the tool call's" and "from_view" not in g and "paths" not in g
        assert teardowns == [("request", ["/context"]), ("appcontext", ["/context"])]
    assert teardowns[2:] == [("appcontext", None)]  # the outer context's own, after the internal request's


def test_the_internal_request_has_contexts_without_an_outer_app_context(app):
    assert call_directly(app, "context_view", {}) == {"paths": ["/context"]}
    assert app.extensions["teardowns"] == [("request", ["/context"]), ("appcontext", ["/context"])]


# URL variables take their converters' types
def test_an_int_variables_schema_is_integer_with_its_bounds(client):
    tools = {tool["name"]: tool for tool in McpSession(client).post("tools/list", {})["result"]["tools"]}
    assert tools["shelf_item"]["inputSchema"]["properties"]["item_id"] == {
        "type": "integer", "minimum": 1, "description": "The URL variable <item_id>."}


@pytest.mark.parametrize("item_id", [1.0, 1e300, True, "1"])
def test_an_int_variable_refuses_anything_but_a_json_integer(app, client, runs, item_id):
    answer = McpSession(client).call("shelf_item", {"shelf": "top", "item_id": item_id})
    assert answer.get("isError") is True or answer.get("code") == -32602
    with pytest.raises(ToolError, match=r"^Invalid arguments for tool 'shelf_item': /item_id: .* is not an integer"):
        call_directly(app, "shelf_item", {"shelf": "top", "item_id": item_id})
    assert runs == Counter()


def test_an_int_variable_outside_its_bounds_is_refused_past_the_schema(app, runs):
    with pytest.raises(ToolError, match="/item_id: 0 is less than 1"):
        call_directly(app, "shelf_item", {"shelf": "top", "item_id": 0})
    assert runs == Counter()


def test_a_float_variable_takes_numbers_its_converter_can_read(client, runs):
    session = McpSession(client)
    assert session.call("weigh", {"weight": 2})["structuredContent"] == {"weight": 2.0}
    assert session.call("weigh", {"weight": 123456.25})["structuredContent"] == {"weight": 123456.25}
    refused = refusal_text(session.call("weigh", {"weight": 1e300}))
    assert "/weight: 1e+300 is written 1e+300 in a URL, which its float converter does not take" in refused
    assert runs["weigh"] == 2


def test_a_negative_number_for_an_unsigned_float_variable_is_refused_past_the_schema(app, runs):
    with pytest.raises(ToolError, match="/weight: -1.5 is negative"):
        call_directly(app, "weigh", {"weight": -1.5})
    assert runs == Counter()


@pytest.mark.parametrize("weight", [float("nan"), float("inf"), True, "1.5"])
def test_a_float_variable_refuses_what_is_not_a_finite_number(app, runs, weight):
    with pytest.raises(ToolError, match="/weight: .* is not a (finite )?number"):
        call_directly(app, "weigh", {"weight": weight})
    assert runs == Counter()


# query parameters
def test_query_parameters_reach_the_view_apart_from_a_url_variable_of_the_same_name(client):
    session = McpSession(client)
    tools = {tool["name"]: tool for tool in session.post("tools/list", {})["result"]["tools"]}
    schema = tools["search"]["inputSchema"]
    assert schema["required"] == ["scope"] and schema["properties"]["query"]["properties"]["page"]["type"] == "integer"
    answer = session.call("search", {"scope": "books", "query": {"scope": "title & author", "tag": ["new", "cheap"],
                                                                  "page": 2, "exact": True}})
    assert answer["structuredContent"] == {"scope": "books", "args": {
        "scope": ["title & author"], "tag": ["new", "cheap"], "page": ["2"], "exact": ["true"]}}
    assert session.call("search", {"scope": "books"})["structuredContent"] == {"scope": "books", "args": {}}


def test_a_query_value_that_is_no_scalar_is_refused_past_the_schema(app):
    with pytest.raises(ToolError, match=r"/query/scope: \{'a': 1\} is not a string, finite number or boolean"):
        call_directly(app, "search", {"scope": "books", "query": {"scope": {"a": 1}}}, query_schema={"type": "object"})


@pytest.mark.parametrize("query_schema", [{"type": "array"}, {"properties": {}}, "page",
                                          {"type": "object", "properties": ["page"]}])
def test_a_query_schema_that_is_not_an_object_schema_is_refused_at_declaration(query_schema):
    app = Flask(__name__)

    @app.get("/search")
    def search() -> Any:
        return request.args

    mcp = MCP(app)
    try:
        with pytest.raises(RegistryError, match=r"^expose_route\('search'\): query_schema must be an object schema"):
            mcp.expose_route("search", query_schema=query_schema)
    finally:
        app.extensions["mcp"].shutdown()


def test_a_url_variable_named_query_cannot_share_the_name_with_the_query():
    app = Flask(__name__)

    @app.get("/q/<query>")
    def by_query(query: str) -> str:
        return query

    with pytest.raises(RegistryError, match=r"a URL variable is named 'query', which the query string takes"):
        route_tool(app, "by_query", credentials=lambda ctx: {}, query_schema={"type": "object"})


def test_url_variables_named_body_and_query_are_url_variables_when_nothing_else_takes_the_names():
    app = Flask(__name__)

    @app.get("/<body>/<query>")
    def both(body: str, query: str) -> Any:
        return {"body": body, "query": query, "args": request.args}

    assert call_directly(app, "both", {"body": "b", "query": "q"}) == {"body": "b", "query": "q", "args": {}}


# credentials
def test_the_credentials_come_from_the_calls_context():
    app = Flask(__name__)

    @app.get("/whoami")
    def whoami() -> Any:
        return {"authorization": request.headers.get("Authorization")}

    contexts: list[Any] = []

    def credentials(ctx: Any) -> dict[str, str]:
        contexts.append(ctx)
        return {"Authorization": f"Bearer {ctx.token}"}

    ctx = SimpleNamespace(token="tok-1")
    assert route_tool(app, "whoami", credentials=credentials).fn(ctx) == {"authorization": "Bearer tok-1"}
    assert contexts == [ctx]



def test_a_route_tool_whose_name_is_taken_names_its_view_and_the_other_declaration():
    app = Flask(__name__)

    @app.get("/orders/<int:order_id>")
    def get_order(order_id: int) -> Any:
        return jsonify(id=order_id)

    mcp = MCP(app)
    try:
        mcp.expose_route("get_order")
        with pytest.raises(RegistryError) as refused:
            @mcp.tool(name="get_order")
            def fetch(order_id: int) -> int:
                """Fetch an order."""
                return order_id
        here = "tests/extension/test_route_tools.py"
        test = "test_a_route_tool_whose_name_is_taken_names_its_view_and_the_other_declaration.<locals>"
        message = str(refused.value)
        assert (f"declared at expose_route('get_order') of the view at {here}:{get_order.__code__.co_firstlineno}, "
                f"function {test}.get_order; again at {here}:") in message
        assert f"function {test}.fetch;" in message
        assert "web/route_tools.py" not in message  # the package's own module is no place of the user's
    finally:
        app.extensions["mcp"].shutdown()

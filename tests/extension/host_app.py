"""A Flask app that existed before MCP: a home page, orders behind its own token login, its own 404 page.

MCP is added to it as a user would (`MCP(app)`), with a tool, a resource, a prompt, a principal loader
that reads the app's own tokens, and two of its routes made tools. The unit tests drive it with Flask's
test client; the e2e tests serve it with gunicorn (`tests.extension.host_app:create_app()`).
"""

from __future__ import annotations

from typing import Any

from flask import Flask, abort, g, jsonify, request

from flask_mcp_gevent import MCP

# The app's own credentials: token -> user. alice may use every MCP tool; bob add and two order tools (the
# app itself lets him read orders, not delete them).
TOKENS = {"tok-alice": "alice", "tok-bob": "bob"}
GRANTS = {"alice": ["*"], "bob": ["add", "get_order", "delete_order"]}
ORDER_BODY_SCHEMA = {
    "type": "object",
    "properties": {"item": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1}},
    "required": ["item", "quantity"],
    "additionalProperties": False,
}


def user_of(headers: Any) -> str | None:
    """The user a request's Authorization header names, or None."""
    return TOKENS.get((headers.get("Authorization") or "").removeprefix("Bearer "))


def create_app(settings: dict[str, Any] | None = None) -> Flask:
    """The host app, with MCP at /mcp."""
    app = Flask(__name__)
    orders: dict[int, dict[str, Any]] = {1: {"id": 1, "item": "tea", "quantity": 2, "owner": "alice"}}

    @app.before_request
    def require_login_for_orders() -> Any:
        """The app's own login: orders need a known token; bob may only read."""
        g.user = user_of(request.headers)
        if request.path.startswith("/orders"):
            if g.user is None:
                return jsonify(error="login required"), 401
            if request.method != "GET" and g.user != "alice":
                return jsonify(error=f"{g.user} may not change orders"), 403
        return None

    @app.get("/")
    def home() -> str:
        """The host's own home page."""
        return "the host's home page"

    @app.get("/orders/<int:order_id>")
    def get_order(order_id: int) -> Any:
        """Fetch one order by its id."""
        if order_id not in orders:
            abort(404)
        return jsonify({**orders[order_id], "seen_by": g.user})

    @app.post("/orders/<string:shelf>")
    def create_order(shelf: str) -> Any:
        """Place an order on a shelf."""
        body = request.get_json()
        order = {"id": max(orders) + 1, "shelf": shelf, **body, "owner": g.user}
        orders[order["id"]] = order
        return jsonify(order), 201

    @app.delete("/orders/<int:order_id>")
    def delete_order(order_id: int) -> Any:
        """Delete an order."""
        orders.pop(order_id, None)
        return "", 204

    @app.get("/files/<path:name>/<uuid:ref>/<float:weight>/<any(small, large):size>")
    def file_info(name: str, ref: Any, weight: float, size: str) -> Any:
        """Echo what the URL carried (for the converters' schemas)."""
        return jsonify(name=name, ref=str(ref), weight=weight, size=size)

    @app.errorhandler(404)
    def not_found(error: Exception) -> Any:
        """The host's own 404 page."""
        return jsonify(error="no such thing here"), 404

    mcp = MCP(app, settings=settings)

    @mcp.tool
    def add(a: int, b: int = 0) -> int:
        """Add two integers.

        Args:
            a: The first addend.
            b: The second addend.
        """
        return a + b

    @mcp.resource("config://host")
    def host_config() -> dict[str, Any]:
        """The host's public settings."""
        return {"orders": len(orders)}

    @mcp.prompt
    def review(code: str) -> str:
        """Review a piece of code.

        Args:
            code: The code to review.
        """
        return f"Please review:\n{code}"

    @mcp.principal_loader
    def load_principal(incoming: Any) -> dict[str, Any] | None:
        """The app's own token login, as an MCP principal."""
        user = user_of(incoming.headers)
        return None if user is None else {"principal": user, "tools": GRANTS[user], "resources": ["*"],
                                          "prompts": ["*"]}

    mcp.expose_route("get_order")
    mcp.expose_route("create_order", body_schema=ORDER_BODY_SCHEMA)
    mcp.expose_route("delete_order")
    mcp.expose_route("file_info")
    app.extensions["host_mcp"] = mcp
    return app


def create_auditing_app() -> Flask:
    """The host app with an audit hook that reads every request's JSON before MCP does (as logging hooks do)."""
    app = create_app()
    audited: list[Any] = []

    @app.before_request
    def audit_json() -> None:
        """Keep the method of every JSON request (the body read here, before MCP's view)."""
        body = request.get_json(silent=True)
        audited.append(body.get("method") if isinstance(body, dict) else None)

    app.extensions["audited"] = audited
    return app

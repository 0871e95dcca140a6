"""A bookshop that had a Flask app before it had MCP: books, orders, a token login and its own error pages.

The lines under "MCP" at the end of create_app are all it takes to let an AI client search the books, read one
through the shop's own route, and place an order as the signed-in customer, through the shop's own checks.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from flask import Flask, abort, g, jsonify, request
from werkzeug.exceptions import HTTPException

from flask_mcp_gevent import MCP


class Book(TypedDict):
    """A book the shop sells."""

    id: int
    title: str
    genre: str
    price: float


BOOKS: dict[int, Book] = {
    1: {"id": 1, "title": "The Hobbit", "genre": "fantasy", "price": 12.5},
    2: {"id": 2, "title": "Dune", "genre": "science fiction", "price": 15.0},
    3: {"id": 3, "title": "A Wizard of Earthsea", "genre": "fantasy", "price": 11.0},
}
# The shop's own login: a bearer token per customer. Staff may see every order.
USERS = {
    "alice-token": {"name": "alice", "staff": True},
    "bob-token": {"name": "bob", "staff": False},
}
ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "book_id": {"type": "integer", "description": "Which book."},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many copies."},
    },
    "required": ["book_id", "quantity"],
    "additionalProperties": False,
}


def create_app(settings: dict | None = None) -> Flask:
    """The shop; settings are the MCP settings (MCP_* names without the prefix, lower case)."""
    app = Flask(__name__)
    orders: dict[int, dict[str, object]] = {}

    @app.before_request
    def sign_in() -> None:
        """Who is calling, from the Authorization header (None for a visitor)."""
        token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        g.user = USERS.get(token)

    @app.errorhandler(HTTPException)
    def as_json(error: HTTPException):
        """The shop answers its errors in JSON, for its own web client."""
        return jsonify(error=error.name, detail=error.description), error.code

    @app.get("/")
    def home():
        """The shop's front page."""
        return "Welcome to the bookshop"

    @app.get("/books/<int:book_id>")
    def get_book(book_id: int):
        """One book by its id."""
        if book_id not in BOOKS:
            abort(404, f"no book {book_id}")
        return jsonify(BOOKS[book_id])

    @app.post("/orders")
    def create_order():
        """Order copies of a book, as the signed-in customer."""
        if g.user is None:
            abort(401, "sign in first")
        body = request.get_json(silent=True) or {}
        if body.get("book_id") not in BOOKS:
            abort(404, f"no book {body.get('book_id')}")
        order = {"id": len(orders) + 1, "customer": g.user["name"], "book_id": body["book_id"],
                 "quantity": body.get("quantity", 1)}
        orders[order["id"]] = order
        return jsonify(order), 201

    @app.get("/orders/<int:order_id>")
    def get_order(order_id: int):
        """One order: its customer's, or any for staff."""
        order = orders.get(order_id)
        if order is None or g.user is None or not (g.user["staff"] or order["customer"] == g.user["name"]):
            abort(404, f"no order {order_id}")
        return jsonify(order)

    # MCP: the shop's own login says who the caller is; a tool of its own; two routes become tools.
    mcp = MCP(app, settings=settings)

    @mcp.principal_loader
    def caller(incoming):
        """The signed-in customer, who may use every tool; None (401) for a visitor."""
        user = USERS.get(incoming.headers.get("Authorization", "").removeprefix("Bearer ").strip())
        return None if user is None else {"principal": user["name"], "tools": ["*"]}

    @mcp.tool
    def find_books(genre: Literal["fantasy", "science fiction"], max_price: float = 100.0) -> list[str]:
        """Titles of the books of a genre, cheapest first.

        Args:
            genre: Which shelf to look on.
            max_price: Leave out books dearer than this.
        """
        shelf = sorted((b for b in BOOKS.values() if b["genre"] == genre and b["price"] <= max_price),
                       key=lambda book: book["price"])
        return [book["title"] for book in shelf]

    mcp.expose_route("get_book", description="Read one book of the shop by its id.")
    mcp.expose_route("create_order", body_schema=ORDER_SCHEMA)
    mcp.expose_route("get_order")
    return app


app = create_app()

"""A bookshop that had a Flask app before it had MCP: books and orders in SQLite, a token login, JSON error pages.

The part under "MCP" lets an AI client search the shelves, read the catalogue, cost an order, place and cancel
orders as the signed-in customer and, for staff, report sales. Its tools use the shop's own `db.session` and
`current_app.config` as a view does: each call runs inside a fresh application context of this app.

    flask --app examples.bookshop.app mcp tools
    FLASK_SQLALCHEMY_DATABASE_URI=sqlite:////tmp/shop.sqlite flask --app examples.bookshop.app mcp serve
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask, abort, current_app, g, jsonify, request
from sqlalchemy import func, select
from werkzeug.exceptions import HTTPException

from flask_mcp_gevent import MCP, Context, ToolError

from .models import GENRES, Book, Genre, Order, db, seed_books

# The shop's own login: a bearer token per customer. Staff may see every order and add books.
USERS = {
    "alice-token": {"name": "alice", "staff": True},
    "bob-token": {"name": "bob", "staff": False},
}
DEFAULT_CONFIG = {
    "SQLALCHEMY_DATABASE_URI": "sqlite:///bookshop.sqlite",  # in the app's instance folder
    "SHIPPING_FEE": 3.5,
    "FREE_SHIPPING_OVER": 40.0,
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


def user_of(incoming: Any) -> dict[str, Any] | None:
    """The customer a request's Authorization header signs in (None for a visitor)."""
    return USERS.get(incoming.headers.get("Authorization", "").removeprefix("Bearer ").strip())


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """The shop; config overrides the defaults and FLASK_* environment variables (FLASK_SHIPPING_FEE=4)."""
    app = Flask(__name__)
    app.config.from_mapping(DEFAULT_CONFIG)
    app.config.from_prefixed_env()
    app.config.from_mapping(config or {})
    db.init_app(app)
    with app.app_context():
        seed_books()

    @app.before_request
    def sign_in() -> None:
        """Who is calling, from the Authorization header (None for a visitor)."""
        g.user = user_of(request)

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
        book = db.session.get(Book, book_id) or abort(404, f"no book {book_id}")
        return jsonify(book.as_json())

    @app.post("/books")
    def add_book():
        """Put a new book on the shelves (staff only)."""
        if g.user is None or not g.user["staff"]:
            abort(403, "staff only")
        body = request.get_json(silent=True) or {}
        title, genre, price = body.get("title"), body.get("genre"), body.get("price")
        if not isinstance(title, str) or not title or genre not in GENRES or not isinstance(price, int | float):
            abort(400, f"a book needs a title, a genre of {list(GENRES)} and a price")
        book = Book(title=title, genre=genre, price=float(price))
        db.session.add(book)
        db.session.commit()
        return jsonify(book.as_json()), 201

    @app.post("/orders")
    def create_order():
        """Order copies of a book, as the signed-in customer."""
        if g.user is None:
            abort(401, "sign in first")
        body = request.get_json(silent=True) or {}
        book_id = body.get("book_id")
        if not isinstance(book_id, int) or db.session.get(Book, book_id) is None:
            abort(404, f"no book {book_id}")
        quantity = body.get("quantity", 1)
        if not isinstance(quantity, int) or not 1 <= quantity <= 10:
            abort(400, "order 1 to 10 copies")
        order = Order(customer=g.user["name"], book_id=book_id, quantity=quantity)
        db.session.add(order)
        db.session.commit()
        return jsonify(order.as_json()), 201

    @app.get("/orders/<int:order_id>")
    def get_order(order_id: int):
        """One order: its customer's, or any for staff."""
        order = db.session.get(Order, order_id)
        if order is None or g.user is None or not (g.user["staff"] or order.customer == g.user["name"]):
            abort(404, f"no order {order_id}")
        return jsonify(order.as_json())

    mcp.init_app(app)  # after the routes: it exposes three of them as tools
    return app


# MCP: the shop's login says who the caller is; tools of its own use its database; three routes become tools.
mcp = MCP()
CUSTOMER_TOOLS = ["find_books", "shipping_cost", "my_orders", "cancel_order", "get_book", "create_order", "get_order"]


@mcp.principal_loader
def shop_login(incoming: Any) -> dict[str, Any] | None:
    """The signed-in customer (staff may use every tool, customers theirs); None (401) for a visitor."""
    user = user_of(incoming)
    if user is None:
        return None
    return {"principal": user["name"], "tools": ["*"] if user["staff"] else CUSTOMER_TOOLS,
            "resources": ["*"], "prompts": ["*"]}


def signed_in_customer(ctx: Context) -> str:
    """The customer calling: the shop's login names an MCP caller "app:<name>" (on stdio nobody signed in)."""
    if ctx.principal is None or not ctx.principal.startswith("app:"):
        raise ToolError("Sign in to the shop first: this tool acts for a customer")
    return ctx.principal.removeprefix("app:")


def order_of(customer: str, order_id: int) -> Order:
    """The customer's own order, or the ToolError the model reads."""
    order = db.session.get(Order, order_id)
    if order is None or order.customer != customer:
        raise ToolError(f"You have no order {order_id}")
    return order


@mcp.tool
def find_books(genre: Genre, max_price: float = 100.0) -> list[str]:
    """Titles of the books of a genre, cheapest first.

    Args:
        genre: Which shelf to look on.
        max_price: Leave out books dearer than this.
    """
    shelf = select(Book.title).where(Book.genre == genre, Book.price <= max_price).order_by(Book.price, Book.id)
    return list(db.session.scalars(shelf))


@mcp.tool
def shipping_cost(book_id: int, quantity: int = 1) -> dict[str, Any]:
    """What an order would cost with shipping (free above the shop's threshold).

    Args:
        book_id: Which book.
        quantity: How many copies.
    """
    book = db.session.get(Book, book_id)
    if book is None:
        raise ToolError(f"There is no book {book_id}")
    config = current_app.config
    books = round(book.price * quantity, 2)
    shipping = 0.0 if books >= config["FREE_SHIPPING_OVER"] else float(config["SHIPPING_FEE"])
    return {"title": book.title, "books": books, "shipping": shipping, "total": round(books + shipping, 2)}


@mcp.tool
def my_orders(ctx: Context) -> list[dict[str, Any]]:
    """Your orders, newest first."""
    customer = signed_in_customer(ctx)
    mine = select(Order).where(Order.customer == customer).order_by(Order.id.desc())
    return [order.as_json() for order in db.session.scalars(mine)]


CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Yes, cancel it."}},
    "required": ["confirm"],
}


@mcp.tool
def cancel_order(order_id: int, ctx: Context) -> str:
    """Cancel one of your orders, after asking you to confirm.

    Args:
        order_id: Which order.
    """
    customer = signed_in_customer(ctx)
    order = order_of(customer, order_id)
    question = f"Cancel order {order_id} ({order.quantity} x {order.book.title})?"
    # The answer may take minutes: hold no database connection while waiting for it.
    db.session.close()
    answer = ctx.elicit(question, CONFIRM)
    content = answer.get("content")
    if answer.get("action") != "accept" or not isinstance(content, dict) or content.get("confirm") is not True:
        return f"Order {order_id} stays {order.status}."
    # On MCP 2026-07-28 the tool runs again from the top with the answer: cancel once, whatever a client resends.
    ctx.consume_answers()
    order = order_of(customer, order_id)  # as it is now, not as it was before the question
    order.status = "cancelled"
    db.session.commit()
    return f"Order {order_id} is cancelled."


@mcp.tool(task="optional")
def sales_report(book_id: int) -> dict[str, Any]:
    """How many orders and copies of a book customers have placed (cancelled ones left out).

    Args:
        book_id: Which book.
    """
    book = db.session.get(Book, book_id)
    if book is None:
        raise ToolError(f"There is no book {book_id}")
    placed = (select(func.count(Order.id), func.coalesce(func.sum(Order.quantity), 0))
              .where(Order.book_id == book_id, Order.status == "placed"))
    orders, copies = db.session.execute(placed).one()
    return {"title": book.title, "orders": orders, "copies": copies}


@mcp.resource("shop://catalogue", mime_type="application/json")
def catalogue() -> dict[str, Any]:
    """Every book on the shop's shelves."""
    return {"books": [book.as_json() for book in db.session.scalars(select(Book).order_by(Book.id))]}


@mcp.prompt
def recommend(genre: str) -> str:
    """Ask for a recommendation among the shop's books of a genre.

    Args:
        genre: The genre the customer likes.
    """
    titles = db.session.scalars(select(Book.title).where(Book.genre == genre).order_by(Book.title))
    return f"A customer likes {genre}. Recommend one of these books of the shop, and say why: {'; '.join(titles)}."


mcp.expose_route("get_book", description="Read one book of the shop by its id.")
mcp.expose_route("create_order", body_schema=ORDER_SCHEMA)
mcp.expose_route("get_order")

app = create_app()

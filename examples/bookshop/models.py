"""The bookshop's data: books and orders in SQLite through Flask-SQLAlchemy, and the books it opens with."""

from __future__ import annotations

from typing import Any, Literal, get_args

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import ForeignKey, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = ["GENRES", "Book", "Genre", "Order", "db", "seed_books"]

Genre = Literal["fantasy", "science fiction"]
GENRES: tuple[str, ...] = get_args(Genre)
FIRST_BOOKS = [
    {"title": "The Hobbit", "genre": "fantasy", "price": 12.5},
    {"title": "Dune", "genre": "science fiction", "price": 15.0},
    {"title": "A Wizard of Earthsea", "genre": "fantasy", "price": 11.0},
]


class Base(DeclarativeBase):
    """What every model is made from (the models subclass it rather than db.Model, so type checkers see them)."""


db = SQLAlchemy(model_class=Base)


class Book(Base):
    """A book the shop sells."""

    __tablename__ = "book"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str]
    genre: Mapped[str]
    price: Mapped[float]

    def as_json(self) -> dict[str, Any]:
        """The book as the shop's pages show it."""
        return {"id": self.id, "title": self.title, "genre": self.genre, "price": self.price}


class Order(Base):
    """Copies of one book a customer ordered; "placed" until cancelled."""

    __tablename__ = "order"
    id: Mapped[int] = mapped_column(primary_key=True)
    customer: Mapped[str]
    book_id: Mapped[int] = mapped_column(ForeignKey("book.id"))
    quantity: Mapped[int]
    status: Mapped[str] = mapped_column(default="placed")
    book: Mapped[Book] = relationship()

    def as_json(self) -> dict[str, Any]:
        """The order as the shop's pages show it."""
        return {"id": self.id, "customer": self.customer, "book_id": self.book_id, "title": self.book.title,
                "quantity": self.quantity, "status": self.status}


def seed_books() -> None:
    """Create the tables, and put the first books on the shelves of an empty shop (inside an app context)."""
    db.create_all()
    if db.session.scalar(select(Book.id).limit(1)) is None:
        db.session.add_all(Book(**book) for book in FIRST_BOOKS)
        db.session.commit()

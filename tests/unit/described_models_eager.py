"""TypedDict and dataclass fields described by Annotated and by docstrings, with annotations evaluated at once.

tests/unit/described_models_lazy.py is the same with `from __future__ import annotations`.
"""

from dataclasses import dataclass
from typing import Annotated, NotRequired, TypedDict


class Address(TypedDict):
    """Where to deliver.

    Attributes:
        street: The street and number.
        city: Overridden by Annotated.
    """

    street: str
    city: Annotated[str, "The city."]
    note: NotRequired[Annotated[str, "Anything the courier should know."]]


@dataclass
class Order:
    """An order.

    Args:
        item: What is ordered.
        address: Where it goes.
            Continued on a second line.
    """

    item: str
    address: Address
    quantity: Annotated[int, "How many."] = 1


def place(order: Order, addresses: list[Address]) -> Order:
    """Place an order (a tool in the tests)."""
    return order


def deliveries() -> list[Address]:
    """Where orders go (a tool in the tests)."""
    return []

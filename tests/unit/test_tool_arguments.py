"""A hinted tool's JSON arguments made into what its hints name (toolkit/arguments.py), nested too.

Each value here is valid by the inferred schema; what cannot become its type raises InvalidArgument with its path.
"""

from __future__ import annotations

import datetime
import enum
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Literal, TypedDict

import pytest

from flask_mcp_gevent import tool
from flask_mcp_gevent.toolkit.arguments import InvalidArgument
from flask_mcp_gevent.toolkit.specs import spec_of

REF = "12345678-1234-5678-1234-567812345678"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Window:
    start: datetime.datetime
    end: datetime.datetime
    nights: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if self.end <= self.start:
            raise ValueError("end must come after start")
        self.nights = (self.end - self.start).days


class Stay(TypedDict):
    window: Window
    guests: list[uuid.UUID]


def converted(fn, arguments):
    """The arguments fn's spec hands its function."""
    spec = spec_of(tool(fn))
    return spec.convert_arguments(arguments)


def test_arguments_whose_hints_are_json_values_are_not_converted_at_all():
    def plain(text: str, n: int, tags: list[str], mode: Literal["a", "b"] = "a") -> str: ...
    assert spec_of(tool(plain)).convert_arguments is None


def test_each_kind_is_converted():
    def fn(at: datetime.datetime, day: datetime.date, ref: uuid.UUID, level: Level, pair: tuple[int, Level],
           rest: tuple[datetime.date, ...], note: Annotated[datetime.date, "A day."], text: str) -> None: ...
    assert converted(fn, {"at": "2024-05-01T12:00:00Z", "day": "2024-05-01", "ref": REF, "level": 2,
                          "pair": [1, 1], "rest": ["2024-01-01"], "note": "2024-02-02", "text": "2024-05-01"}) == {
        "at": datetime.datetime(2024, 5, 1, 12, tzinfo=datetime.UTC), "day": datetime.date(2024, 5, 1),
        "ref": uuid.UUID(REF), "level": Level.HIGH, "pair": (1, Level.LOW), "rest": (datetime.date(2024, 1, 1),),
        "note": datetime.date(2024, 2, 2), "text": "2024-05-01"}


def test_values_nested_in_lists_dicts_typeddicts_and_dataclasses_are_converted():
    def fn(stays: dict[str, Stay]) -> None: ...
    stays = converted(fn, {"stays": {"a": {"window": {"start": "2024-05-01T00:00", "end": "2024-05-03T00:00"},
                                           "guests": [REF]}}})["stays"]
    assert stays["a"]["window"].nights == 2 and stays["a"]["guests"] == [uuid.UUID(REF)]


def test_optional_and_union_values_become_the_member_they_fit():
    def fn(day: datetime.date | None, when: int | datetime.date, level: Level | str) -> None: ...
    assert converted(fn, {"day": None, "when": 3, "level": "x"}) == {"day": None, "when": 3, "level": "x"}
    assert converted(fn, {"day": "2024-01-01", "when": "2024-01-02", "level": 1}) == {
        "day": datetime.date(2024, 1, 1), "when": datetime.date(2024, 1, 2), "level": Level.LOW}


def test_a_union_falls_through_to_a_member_that_can_take_the_value():
    def fn(day: datetime.date | str) -> None: ...
    assert converted(fn, {"day": "someday"}) == {"day": "someday"}


def test_a_read_only_field_sent_along_is_dropped():
    def fn(window: Window) -> None: ...
    window = converted(fn, {"window": {"start": "2024-05-01T00:00", "end": "2024-05-02T00:00", "nights": 9}})["window"]
    assert window.nights == 1


@pytest.mark.parametrize(("arguments", "path", "message"), [
    ({"day": "2024-13-45"}, "/day", "'2024-13-45' is not an ISO 8601 date, as 2024-05-01"),
    ({"day": "2024-01-01", "ref": "nope"}, "/ref", "'nope' is not a UUID"),
    ({"day": "2024-01-01", "windows": [{"start": "2024-05-02T00:00", "end": "2024-05-01T00:00"}]}, "/windows/0",
     "not a valid Window: end must come after start"),
    ({"day": "2024-01-01", "windows": [{"start": "2024-05-02T00:00", "end": "later"}]}, "/windows/0/end",
     "'later' is not an ISO 8601 date-time"),
], ids=["date", "uuid", "post-init", "nested"])
def test_a_value_that_cannot_be_converted_names_its_path(arguments, path, message):
    def fn(day: datetime.date, ref: uuid.UUID | None = None, windows: list[Window] | None = None) -> None: ...
    with pytest.raises(InvalidArgument) as caught:
        converted(fn, arguments)
    assert caught.value.path == path and caught.value.message.startswith(message)

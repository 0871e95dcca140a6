"""tools/call of tools whose schemas come from their hints: arguments arrive converted, results are checked.

A value the schema lets through but that cannot become its type is invalid arguments, as a schema violation is
(a result with isError from 2025-11-25, -32602 before); integers are JSON integers only, 1.0 included.
"""

from __future__ import annotations

import datetime
import enum
import uuid
from dataclasses import dataclass
from typing import TypedDict

import pytest

from mcp_tools import Registry, tool
from mcp_tools.add import add

REF = "12345678-1234-5678-1234-567812345678"


class Tone(enum.Enum):
    SOFT = "soft"
    LOUD = "loud"


@dataclass
class Slot:
    day: datetime.date
    tone: Tone = Tone.SOFT


class Booking(TypedDict):
    """A booking made.

    Attributes:
        ref: The booking's reference.
        at: When it starts.
    """

    ref: str
    at: str


@tool
def kinds(at: datetime.datetime, day: datetime.date, ref: uuid.UUID, pair: tuple[int, str], many: tuple[float, ...],
          tone: Tone, slots: list[Slot], maybe: datetime.date | None = None) -> list[str]:
    """Name the Python type each argument arrived as."""
    return [type(value).__name__ for value in (at, day, ref, pair, many, tone, slots[0], slots[0].day,
                                                slots[0].tone, maybe)]


@tool
def book(ref: uuid.UUID, at: datetime.datetime) -> Booking:
    """Book a slot and say what was booked."""
    return {"ref": str(ref), "at": at.isoformat()}


@tool
def bad_booking() -> Booking:
    """Return what its outputSchema refuses."""
    return {"ref": "r", "at": "t", "extra": 1}  # type: ignore[typeddict-unknown-key]


@tool
def double(n: int) -> int:
    """Double an integer."""
    return 2 * n


@tool
def next_day(day: datetime.date) -> datetime.date:
    """The day after day."""
    return day + datetime.timedelta(days=1)


@pytest.fixture
def registry() -> Registry:
    """Only this module's tools."""
    registry = Registry()
    for fn in (kinds, book, bad_booking, double, next_day):
        registry.add_function(fn)
    return registry


def call(rpc, name, arguments):
    """Call a tool; the whole response."""
    return rpc.request("tools/call", {"name": name, "arguments": arguments}, request_id=5)


ARGUMENTS = {"at": "2024-05-01T12:30:00+00:00", "day": "2024-05-01", "ref": REF, "pair": [1, "a"], "many": [1.5, 2],
             "tone": "loud", "slots": [{"day": "2024-06-01"}], "maybe": "2024-07-01"}


def test_hinted_arguments_arrive_as_their_python_types(make_rpc):
    result = call(make_rpc("2025-11-25"), "kinds", ARGUMENTS)["result"]
    assert result["isError"] is False
    assert result["structuredContent"] == {"result": ["datetime", "date", "UUID", "tuple", "tuple", "Tone", "Slot",
                                                      "date", "Tone", "date"]}


def test_tools_list_shows_the_inferred_schemas(make_rpc):
    tools = {t["name"]: t for t in make_rpc("2025-11-25").request("tools/list", {})["result"]["tools"]}
    assert tools["kinds"]["inputSchema"]["properties"]["ref"] == {"type": "string", "format": "uuid"}
    assert tools["book"]["outputSchema"]["properties"]["ref"]["description"] == "The booking's reference."
    assert tools["next_day"]["outputSchema"] == {"type": "object", "required": ["result"], "properties": {
        "result": {"type": "string", "format": "date"}}}


def test_a_typeddict_result_is_its_structured_content(make_rpc):
    result = call(make_rpc("2025-06-18"), "book", {"ref": REF, "at": "2024-05-01T09:00:00"})["result"]
    assert result["structuredContent"] == {"ref": REF, "at": "2024-05-01T09:00:00"}


def test_a_date_result_is_wrapped_in_iso_8601(make_rpc):
    result = call(make_rpc("2025-06-18"), "next_day", {"day": "2024-02-28"})["result"]
    assert result["structuredContent"] == {"result": "2024-02-29"}
    assert result["content"] == [{"type": "text", "text": "2024-02-29"}]


def test_a_result_outside_the_inferred_output_schema_is_an_error(make_rpc):
    result = call(make_rpc("2025-06-18"), "bad_booking", {})["result"]
    assert result["isError"] is True and "outputSchema" in result["content"][0]["text"]


@pytest.mark.parametrize(("name", "arguments", "path"), [
    ("next_day", {"day": "2024-13-45"}, "/day"),
    ("book", {"ref": "not-a-uuid", "at": "2024-05-01T09:00:00"}, "/ref"),
    ("book", {"ref": REF, "at": "yesterday"}, "/at"),
    ("kinds", {**ARGUMENTS, "slots": [{"day": "2024-06-01"}, {"day": "2024-02-30"}]}, "/slots/1/day"),
], ids=["date", "uuid", "datetime", "nested-date"])
def test_a_value_that_cannot_be_converted_is_invalid_arguments_as_a_result_from_2025_11_25(make_rpc, name,
                                                                                           arguments, path):
    result = call(make_rpc("2025-11-25"), name, arguments)["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith(f"Invalid arguments for tool '{name}': {path}: ")


def test_a_value_that_cannot_be_converted_is_invalid_params_before_2025_11_25(make_rpc):
    error = call(make_rpc("2025-06-18"), "next_day", {"day": "2024-13-45"})["error"]
    assert error["code"] == -32602
    assert error["data"]["errors"] == [{"path": "/day",
                                        "message": "'2024-13-45' is not an ISO 8601 date, as 2024-05-01"}]


@pytest.mark.parametrize("value", [1.0, 1e300, True, "1"], ids=["whole-float", "huge-float", "bool", "string"])
@pytest.mark.parametrize("name", ["double", "add"], ids=["hinted", "explicit-schema"])
def test_an_int_parameter_takes_integers_only(make_server, make_rpc, registry, name, value):
    registry.add_function(add)
    rpc = make_rpc("2025-06-18", on=make_server(registry=registry))
    arguments = {"n": value} if name == "double" else {"a": value, "b": 1}
    error = call(rpc, name, arguments)["error"]
    assert error["code"] == -32602 and "is not of type 'integer'" in error["message"]


def test_the_largest_integer_a_client_may_send_is_still_an_integer(make_rpc):
    result = call(make_rpc("2025-06-18"), "double", {"n": 2**63 - 1})["result"]
    assert result["structuredContent"] == {"result": 2**64 - 2}

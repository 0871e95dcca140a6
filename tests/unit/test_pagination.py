"""pagination: opaque cursors that only this server makes, and pages that cover a list exactly once."""

from __future__ import annotations

import base64

import pytest

from flask_mcp_gevent.errors import INVALID_PARAMS, RpcError
from flask_mcp_gevent.protocol.pagination import decode_cursor, encode_cursor, paginate


def test_without_cursor_the_first_page_comes_back_with_a_next_cursor():
    page, cursor = paginate(list(range(5)), None, 2)
    assert page == [0, 1]
    assert isinstance(cursor, str) and cursor


def test_following_cursors_visits_every_item_once():
    items = list(range(7))
    seen, cursor = [], None
    for _ in range(10):
        page, cursor = paginate(items, cursor, 3)
        seen.extend(page)
        if cursor is None:
            break
    assert seen == items


def test_the_last_page_has_no_next_cursor():
    assert paginate([1, 2], None, 2) == ([1, 2], None)
    assert paginate([], None, 5) == ([], None)


def test_cursors_round_trip_and_look_opaque():
    cursor = encode_cursor(42)
    assert decode_cursor(cursor) == 42
    assert "42" not in cursor and "=" not in cursor


@pytest.mark.parametrize("cursor", ["", "bogus", "!!!", 5, None, ["o:1"], "x" * 65, encode_cursor(-1),
                                    "bzph"])
def test_foreign_cursors_are_invalid_params(cursor):
    with pytest.raises(RpcError) as caught:
        decode_cursor(cursor)
    assert caught.value.code == INVALID_PARAMS
    assert "cursor" in caught.value.message


def forged(text: str) -> str:
    """A cursor built by hand the way encode_cursor builds one, from text the server never writes."""
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# int() reads each of these as 0 or 2; the server writes only "o:2" for the second page of two.
@pytest.mark.parametrize("text", ["o:0", "o:+2", "o: 2", "o:2 ", "o:0_2", "o:02", "o:\u0662"])
def test_a_cursor_in_a_form_the_server_never_writes_is_invalid_params(text):
    with pytest.raises(RpcError) as caught:
        paginate(list(range(5)), forged(text), 2)
    assert caught.value.code == INVALID_PARAMS


def test_a_cursor_past_the_end_is_invalid_params():
    with pytest.raises(RpcError) as caught:
        paginate([1, 2], encode_cursor(3), 2)
    assert caught.value.code == INVALID_PARAMS


def test_a_cursor_at_the_end_gives_an_empty_last_page():
    assert paginate([1, 2], encode_cursor(2), 2) == ([], None)

"""stateless.metadata: case-insensitive lookup and the `=?base64?...?=` value form, as SEP-2243's table has it."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.stateless.metadata import InvalidHeaderValue, decode_value, encode_value, get_header


@pytest.mark.parametrize(("value", "encoded"), [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
])
def test_values_encode_and_decode_as_the_spec_table_shows(value, encoded):
    assert encode_value(value) == encoded
    assert decode_value(encoded) == value


@pytest.mark.parametrize("literal", ["SGVsbG8=", "=?base64?SGVsbG8=", "SGVsbG8=?=", "=?base64?="])
def test_a_value_missing_a_sentinel_marker_is_a_literal(literal):
    assert decode_value(literal) == literal


@pytest.mark.parametrize("bad", [
    "=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "=?base64?/w==?=", "caf\u00e9", "a\rb",
])
def test_bad_padding_foreign_characters_and_non_utf8_are_refused(bad):
    with pytest.raises(InvalidHeaderValue):
        decode_value(bad)


def test_surrounding_whitespace_is_not_part_of_the_value():
    assert decode_value("  get_weather\t") == "get_weather"


def test_lookup_ignores_case():
    assert get_header({"mcp-name": "x"}, "Mcp-Name") == "x"
    assert get_header({"MCP-NAME": "x"}, "mcp-name") == "x"
    assert get_header({}, "Mcp-Name") is None

"""encoding: compact JSON, newline-terminated bodies, and Server-Sent Events frames."""

from __future__ import annotations

import json

import pytest

from flask_mcp_gevent.encoding import KEEPALIVE_FRAME, dumps, dumps_line, format_sse_event, loads


def test_dumps_is_compact_utf8():
    assert dumps({"a": [1, 2], "t": "ü"}) == '{"a":[1,2],"t":"ü"}'.encode()


def test_dumps_line_ends_with_exactly_one_newline():
    line = dumps_line({"ok": True})
    assert line == b'{"ok":true}\n'


@pytest.mark.parametrize("data", [b'{"x": [1, "two", null]}', '{"x": 1}', b"[]", b"3"])
def test_loads_accepts_bytes_and_text(data):
    assert loads(data) == json.loads(data)


@pytest.mark.parametrize("data", [b"", b"{", b"\xff", b"NaN"])
def test_loads_raises_value_error_on_malformed_json(data):
    with pytest.raises(ValueError):
        loads(data)


def test_a_message_frame_has_id_event_and_data_lines():
    frame = format_sse_event(b'{"a":1}', event_id="7")
    assert frame == b'id: 7\nevent: message\ndata: {"a":1}\n\n'


def test_a_frame_without_id_has_no_id_line():
    frame = format_sse_event("/mcp?session_id=abc", event="endpoint")
    assert frame == b"event: endpoint\ndata: /mcp?session_id=abc\n\n"


def test_json_with_a_newline_in_a_string_stays_on_one_data_line():
    frame = format_sse_event(dumps({"text": "two\nlines"}), event_id="1")
    assert frame.count(b"\n") == 4  # id, event, data, blank line
    data_line = frame.split(b"\n")[2]
    assert loads(data_line[len(b"data: "):]) == {"text": "two\nlines"}


def test_keepalive_is_an_sse_comment():
    assert KEEPALIVE_FRAME.startswith(b":") and KEEPALIVE_FRAME.endswith(b"\n\n")

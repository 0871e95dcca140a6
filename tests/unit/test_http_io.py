"""http_io: how much of wsgi.input is the body, and the limits on its shape (depth, longest string, batch length,
tool arguments), checked as read."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.messages import parse_body
from flask_mcp_gevent.transports.http_io import (
    BodyLimitExceeded,
    HttpProblem,
    bytes_to_read,
    check_body,
    json_depth_and_longest_string,
)

SETTINGS = Settings.from_environ({"MCP_MAX_JSON_DEPTH": "8", "MCP_MAX_STRING_BYTES": "100", "MCP_MAX_BATCH": "3",
                                  "MCP_MAX_ARGUMENT_BYTES": "200"})


def check(value) -> None:
    """Run the body checks on value as it would arrive over HTTP."""
    data = dumps(value)
    check_body(parse_body(data), data, SETTINGS)


def nested(depth: int):
    """A JSON-RPC request whose params nest to the given total depth."""
    inner: object = 1
    for _ in range(depth - 2):
        inner = [inner]
    return {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": inner}}


def test_depth_and_longest_string_are_measured():
    assert json_depth_and_longest_string({"a": [1, {"b": "xyz"}]}, 64) == (3, 3)
    assert json_depth_and_longest_string("é" * 10, 64) == (0, 20)  # bytes, not characters
    assert json_depth_and_longest_string({"k" * 50: 1}, 64) == (1, 50)  # keys count too


def test_nesting_up_to_the_limit_passes_and_beyond_it_is_400():
    check(nested(8))
    with pytest.raises(BodyLimitExceeded, match="MCP_MAX_JSON_DEPTH") as exceeded:
        check(nested(9))
    assert exceeded.value.status == 400


def test_a_long_string_anywhere_is_413():
    check({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"s": "x" * 100}})
    with pytest.raises(BodyLimitExceeded, match="MCP_MAX_STRING_BYTES") as exceeded:
        check({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"s": "x" * 101}})
    assert exceeded.value.status == 413
    with pytest.raises(BodyLimitExceeded):
        check({"jsonrpc": "2.0", "id": 1, "method": "x" * 101})


def test_a_batch_over_the_limit_is_400():
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    check([ping] * 3)
    with pytest.raises(BodyLimitExceeded, match="MCP_MAX_BATCH") as exceeded:
        check([ping] * 4)
    assert exceeded.value.status == 400


def test_tool_arguments_over_the_limit_are_413():
    def call(arguments):
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": arguments}}

    check(call({"text": "x" * 90}))
    with pytest.raises(BodyLimitExceeded, match="MCP_MAX_ARGUMENT_BYTES") as exceeded:
        check(call({f"k{n}": "x" * 90 for n in range(3)}))
    assert exceeded.value.status == 413
    # The same bytes under another method are not tool arguments.
    check({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {f"k{n}": "x" * 90 for n in range(3)}})


@pytest.mark.parametrize(("environ", "size"), [
    ({"CONTENT_LENGTH": "120"}, 120),
    ({"CONTENT_LENGTH": "0"}, 0),
    ({}, 0),  # neither a length nor a terminated input: no body (a read would wait for the client to close)
    ({"CONTENT_LENGTH": ""}, 0),
    ({"wsgi.input_terminated": True}, 1001),  # a chunked body the server ends: one byte past the limit tells
    ({"wsgi.input_terminated": True, "CONTENT_LENGTH": "120"}, 1001),  # gunicorn ends every body itself
])
def test_the_body_is_content_length_bytes_unless_the_server_ends_the_input(environ, size):
    assert bytes_to_read(environ, 1000) == size


def test_a_content_length_over_the_limit_is_413_before_anything_is_read():
    for environ in ({"CONTENT_LENGTH": "1001"}, {"CONTENT_LENGTH": "1001", "wsgi.input_terminated": True}):
        with pytest.raises(HttpProblem, match="MCP_MAX_BODY_BYTES") as refused:
            bytes_to_read(environ, 1000)
        assert refused.value.status == 413


@pytest.mark.parametrize("declared", ["12a", "-1", "\u00b2"])  # "²" passes str.isdigit, not int()
def test_a_malformed_content_length_is_400(declared):
    with pytest.raises(HttpProblem, match="Malformed Content-Length") as refused:
        bytes_to_read({"CONTENT_LENGTH": declared}, 1000)
    assert refused.value.status == 400

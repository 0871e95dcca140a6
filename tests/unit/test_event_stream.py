"""event_stream: the frames both HTTP transports send, built by encoding.format_sse_event."""

from __future__ import annotations

from mcp_server.transports.event_stream import is_response, priming_frame


def test_the_priming_frame_has_an_id_a_retry_and_empty_data_but_no_event_name():
    assert priming_frame("0/abc", 1000) == b"id: 0/abc\nretry: 1000\ndata: \n\n"


def test_only_results_and_errors_are_responses():
    assert is_response(b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert is_response(b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}')
    assert not is_response(b'{"jsonrpc":"2.0","method":"notifications/progress"}')

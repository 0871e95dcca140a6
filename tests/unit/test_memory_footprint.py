"""What every idle session keeps must stay small: the encoded messages a store holds cost their length."""

from __future__ import annotations

import tracemalloc

from flask_mcp_gevent.encoding import dumps

MESSAGE = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hello"}], "isError": False}}


def test_encoded_messages_cost_their_length_not_the_encoders_working_buffer():
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [dumps(MESSAGE) for _ in range(1000)]
        per_message = (tracemalloc.get_traced_memory()[0] - before) / len(kept)
    finally:
        tracemalloc.stop()
    assert kept[0] == b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}'
    # The bytes object and its list slot; orjson's own buffer would be 4 KiB or more.
    assert per_message < len(kept[0]) + 128

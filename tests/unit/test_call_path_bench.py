"""bench/call_path.py: its counter still sees one call's path, and its import chain is a real chain."""

from __future__ import annotations

from itertools import pairwise

from bench.call_path import count_modules, import_graph, longest_import_chain


def test_one_legacy_call_enters_the_tool_the_protocol_and_the_stream_that_carries_the_answer():
    row = count_modules("legacy", repeat=1)
    # The tool and the protocol layer run the call; the stream read proves the trace spans the answer's way back.
    for module in ("mcp_tools/echo.py", "flask_mcp_gevent/protocol/tools.py",
                   "flask_mcp_gevent/transports/legacy_sse.py", "flask_mcp_gevent/transports/event_stream.py",
                   "flask_mcp_gevent/web/pipeline.py"):
        assert module in row["modules"]
    # Only the call is in the window: what serves other methods is not.
    assert "flask_mcp_gevent/protocol/prompts.py" not in row["modules"]
    assert "flask_mcp_gevent/protocol/resources.py" not in row["modules"]
    assert 10 <= row["count"] <= 80
    assert row["count"] == len(row["modules"])


def test_the_longest_import_chain_links_modules_that_import_each_other():
    graph = import_graph()
    chain = longest_import_chain(graph)
    assert len(chain) >= 10
    assert all(after in graph[before] for before, after in pairwise(chain))
    served = longest_import_chain(import_graph(entry_points=True))
    assert served[0] == "wsgi" and len(served) >= len(chain)

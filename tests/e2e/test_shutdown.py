"""SIGTERM with streams open: every stream ends cleanly and gunicorn exits well within graceful_timeout."""

from __future__ import annotations

import signal
import time
from contextlib import ExitStack

import pytest

from tests.e2e.conftest import E2E_PLUGINS
from tests.e2e.raw_clients import LegacyStream, StreamableSession, call_tool, client
from tests.e2e.server_process import ServerProcess
from tests.e2e.sse_client import iter_events

pytestmark = pytest.mark.e2e

# gunicorn's graceful_timeout is 10 s by default; open streams must not hold the worker that long.
EXIT_WITHIN_S = 8.0
# The streams themselves end at once; idle keep-alive connections are what the worker waits out after that.
STREAMS_END_WITHIN_S = 4.0


def test_sigterm_closes_open_streams_and_exits_promptly():
    with ServerProcess(env={"MCP_PLUGINS": E2E_PLUGINS}) as server, client() as http, ExitStack() as streams:
        legacy = [streams.enter_context(LegacyStream(http, server.base_url, path)) for path in ("/mcp", "/sse", "/mcp")]
        for stream in legacy:
            stream.open()
        # A call still running when the signal comes (its POST has long been answered 202).
        assert legacy[0].post(call_tool("sleep_ms", {"ms": 60000})).status_code == 202
        session = StreamableSession(http, server.url)
        standalone = streams.enter_context(session.open_stream())
        assert standalone.status_code == 200
        standalone_events = iter_events(standalone)

        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        # Each stream ends: its body finishes cleanly (a read error or a timeout would raise here).
        for stream in legacy:
            assert [event.event for event in stream.events] == []
        assert list(standalone_events) == []
        streams_ended = time.monotonic() - started
        code = server.proc.wait(timeout=EXIT_WITHIN_S + 10)
        elapsed = time.monotonic() - started
        assert streams_ended < STREAMS_END_WITHIN_S, f"streams took {streams_ended:.1f}s to end"
        assert elapsed < EXIT_WITHIN_S, f"took {elapsed:.1f}s"
        assert code == 0
        assert "Traceback" not in server.read_log()

"""stdio transport: newline-delimited JSON-RPC on stdin/stdout, for local clients.

Only JSON-RPC lines reach stdout, one per message, flushed each time. File
descriptor 1 is pointed at stderr for everything else, so a stray print in a
tool (or a C library) cannot corrupt the protocol stream.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any, BinaryIO

import gevent
from gevent.fileobject import FileObject

from mcp_server.config import Settings
from mcp_server.dispatcher import Dispatcher
from mcp_server.hub import StreamClosed
from mcp_server.hub.memory import MemoryHub
from mcp_server.logs import configure_logging
from mcp_server.messages import ParseFailure, parse_body
from mcp_server.session import STDIO

__all__ = ["StdioServer", "run_stdio"]

log = logging.getLogger("mcp.stdio")
DRAIN_TIMEOUT_S = 10.0


def claim_stdout() -> BinaryIO:
    """Keep a private handle on the real stdout and send fd 1 and sys.stdout to stderr."""
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return protocol_out


class StdioServer:
    """One session over a pair of byte streams."""

    def __init__(self, core: Dispatcher, reader: Any, writer: BinaryIO) -> None:
        self.core = core
        self.reader = reader
        self.writer = writer
        self.session = core.open_session(STDIO)
        self.running: set[gevent.Greenlet] = set()

    def publish(self, message: Any) -> None:
        """Queue a message for stdout through the session's stream."""
        self.core.hub.publish(self.session.id, message)

    def write_forever(self) -> None:
        """Copy the session's stream to stdout, one JSON line per message."""
        subscription = self.core.hub.subscribe(self.session.id)
        try:
            while True:
                try:
                    item = subscription.get(60.0)
                except StreamClosed:
                    return
                if item is not None:
                    self.writer.write(item[1] + b"\n")
                    self.writer.flush()
        finally:
            subscription.close()

    def handle_line(self, line: bytes) -> None:
        """Parse and accept one line; answers are published as they complete."""
        if not line.strip():
            return
        try:
            body = parse_body(line)
        except ParseFailure as failure:
            self.publish(failure.response)
            return
        rejected = self.core.batch_error(self.session, body)
        if rejected is not None:
            self.publish(rejected)
            return
        running, errors = self.core.accept(self.session, body, self.publish, on_done=self.publish)
        for error in errors:
            self.publish(error)
        for greenlet in running:
            self.running.add(greenlet)
            greenlet.rawlink(self.running.discard)

    def serve(self) -> None:
        """Read until EOF, then let running requests finish and their answers flush; on SIGTERM stop at once."""
        writer = gevent.spawn(self.write_forever)
        try:
            for line in self.reader:
                self.handle_line(line)
            # EOF: the client has sent everything, but the answers to what it sent are still owed.
            gevent.joinall(list(self.running), timeout=DRAIN_TIMEOUT_S)
            gevent.sleep(0)
        finally:
            # Closing first lets the writer flush what is queued, and drops answers of calls killed below.
            self.core.hub.close_session(self.session.id)
            # After SIGTERM (the client gave up waiting) or the drain timeout, calls in flight are cancelled.
            gevent.killall(list(self.running), timeout=1.0)
            writer.join(timeout=2.0)


def run_stdio(settings: Settings) -> int:
    """Serve one client on stdin/stdout until EOF or SIGTERM."""
    configure_logging(settings.log_level, settings.log_format)
    protocol_out = claim_stdout()
    core = Dispatcher(settings, hub=MemoryHub(settings))
    server = StdioServer(core, FileObject(sys.stdin.buffer, "rb"), protocol_out)
    main = gevent.getcurrent()
    gevent.signal_handler(signal.SIGTERM, lambda: gevent.kill(main, SystemExit))
    log.info("serving MCP on stdio")
    try:
        server.serve()
    except (SystemExit, KeyboardInterrupt):
        log.info("stdio server stopping")
    return 0

"""stdio transport: newline-delimited JSON-RPC on stdin/stdout, for local clients.

Only JSON-RPC lines reach stdout, one per message (a batch's answers as one array), flushed each time. File
descriptor 1 is pointed at stderr for everything else, so a stray print in a
tool (or a C library) cannot corrupt the protocol stream.

The connection's era follows its first request (eras.StdioEra): `initialize` makes it a session-era session; a
request with 2026-07-28 `_meta` makes it stateless, and then each request runs like one on the stateless HTTP wire
(its own ephemeral session, the stateless table, no headers to check). `server/discover` is answered the stateless
way in either era and decides nothing.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from typing import Any, BinaryIO

import gevent
from gevent.fileobject import FileObject

from flask_mcp_gevent.encoding import dumps
from flask_mcp_gevent.eras import STATELESS, StdioEra
from flask_mcp_gevent.logs import configure_logging
from flask_mcp_gevent.mailbox import Empty, Mailbox
from flask_mcp_gevent.messages import INVALID, NOTIFICATION, REQUEST, Body, Message, ParseFailure, parse_body
from flask_mcp_gevent.server import Server, answers_of
from flask_mcp_gevent.session import STDIO, Session
from flask_mcp_gevent.stateless.listen import LISTEN
from flask_mcp_gevent.stateless.metadata import SUPPORTED_VERSIONS, ephemeral_session

__all__ = ["Outbox", "StdioConnection", "run_stdio"]

log = logging.getLogger("mcp.stdio")
DRAIN_TIMEOUT_S = 10.0
# How long open listens get to send their closing result on SIGTERM.
LISTEN_CLOSE_TIMEOUT_S = 2.0


def claim_stdout() -> BinaryIO:
    """Keep a private handle on the real stdout and send fd 1 and sys.stdout to stderr."""
    protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return protocol_out


class Outbox:
    """The lines waiting for stdout, bounded like a stream's queue: a client that stops reading is cut off."""

    def __init__(self, max_lines: int, max_bytes: int) -> None:
        self.lines = Mailbox()
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        # Why nothing more is written (None while open): the connection ended, or the client stopped reading.
        self.closed: str | None = None

    def put(self, data: bytes) -> None:
        """Queue one line; past MCP_QUEUE_MAX or MCP_QUEUE_MAX_BYTES the client is cut off instead."""
        if self.closed is not None:
            return
        if self.lines.qsize() >= self.max_lines or (self.queued_bytes and self.queued_bytes + len(data) >
                                                    self.max_bytes):
            log.warning("stdio client stopped reading: its queue is full (slow consumer); writing nothing more")
            self.close("slow consumer")
            return
        self.queued_bytes += len(data)
        self.lines.put_nowait(data)

    def close(self, reason: str) -> None:
        """Write what is queued, then nothing more."""
        if self.closed is None:
            self.closed = reason
            self.lines.put_nowait(None)

    def take(self) -> bytes | None:
        """The next line to write, waiting for one; None once closed and written out."""
        while True:
            try:
                data = self.lines.get(60.0)
            except Empty:
                continue
            if data is not None:
                self.queued_bytes -= len(data)
            return data


class StdioConnection:
    """One client over a pair of byte streams: its lines in, its messages out, and no store in between."""

    def __init__(self, server: Server, reader: Any, writer: BinaryIO) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        # The local client's one session-era session: kept here, never in the store (Session.stored).
        self.session = Session(transport=STDIO)
        self.outbox = Outbox(server.settings.queue_max, server.settings.queue_max_bytes)
        self.running: set[gevent.Greenlet] = set()
        self.era = StdioEra()
        # Stateless-era requests by id, for notifications/cancelled (they run in sessions of their own, not this one).
        self.stateless_requests: dict[Any, gevent.Greenlet] = {}
        self.listens: dict[Any, gevent.Greenlet] = {}

    def publish(self, message: Any) -> None:
        """Queue a message for stdout."""
        self.outbox.put(dumps(message))

    def write_forever(self) -> None:
        """Write the queued messages to stdout, one JSON line each, until the connection is closed."""
        while (data := self.outbox.take()) is not None:
            self.writer.write(data + b"\n")
            self.writer.flush()

    def handle_line(self, line: bytes) -> None:
        """Parse and accept one line; answers are published as they complete."""
        if not line.strip():
            return
        try:
            body = parse_body(line)
        except ParseFailure as failure:
            self.publish(failure.response)
            return
        if not body.is_batch and self.era.classify(body.messages[0].raw).stateless:
            self.handle_stateless(body.messages[0])
            return
        if body.is_batch:
            self.handle_batch(body)
            return
        running, errors = self.server.accept(self.session, body, self.publish, on_done=self.publish)
        for error in errors:
            self.publish(error)
        self.keep_running(running)

    def handle_batch(self, body: Body) -> None:
        """Refuse a batch the session's version has none of, or answer it as one JSON array once all are done."""
        rejected = self.server.batch_error(self.session, body)
        if rejected is not None:
            self.publish(rejected)
            return
        running, errors = self.server.accept(self.session, body, self.publish)
        self.keep_running(running)
        if running or errors:
            self.keep_running([gevent.spawn(self.publish_batch, running, errors)])

    def publish_batch(self, running: list[gevent.Greenlet], errors: list[dict[str, Any]]) -> None:
        """Publish a batch's responses together, as JSON-RPC answers a batch; none if all were notifications."""
        answers = answers_of(running, errors)
        if answers:
            self.publish(answers)

    def keep_running(self, greenlets: list[gevent.Greenlet]) -> None:
        """Hold greenlets until they end, so EOF waits for them and SIGTERM stops them."""
        for greenlet in greenlets:
            self.running.add(greenlet)
            greenlet.rawlink(self.running.discard)

    def handle_stateless(self, message: Message) -> None:
        """Serve one 2026-07-28 message: validate and start a request, or act on notifications/cancelled."""
        if message.kind == INVALID:
            self.publish(message.error)
        elif message.kind == NOTIFICATION:
            if message.method == "notifications/cancelled":
                self.cancel(message.params.get("requestId"))
        elif message.kind == REQUEST:
            rejection = STATELESS.validate(message, None, SUPPORTED_VERSIONS)
            if rejection is not None:
                self.publish(rejection.response())
                return
            session = ephemeral_session(message.meta, None)
            greenlet = self.server.start_request(session, message, self.publish, on_done=self.publish)
            self.track(message, greenlet)
        # A client response has nothing to answer here: this wire sends no requests.

    def track(self, message: Message, greenlet: gevent.Greenlet) -> None:
        """Remember a running stateless request until it ends, for cancellation, EOF and SIGTERM."""
        table = self.listens if message.method == LISTEN else self.stateless_requests
        table[message.id] = greenlet
        self.running.add(greenlet)

        def done(finished: gevent.Greenlet) -> None:
            self.running.discard(finished)
            if table.get(message.id) is finished:
                del table[message.id]

        greenlet.rawlink(done)

    def cancel(self, request_id: Any) -> None:
        """Stop a running stateless request or end a listen; it sends nothing more (unknown ids are ignored)."""
        greenlet = self.stateless_requests.get(request_id) or self.listens.get(request_id)
        if greenlet is not None:
            greenlet.kill(block=False)

    def end_listens(self, graceful: bool) -> None:
        """End open listens: on SIGTERM each sends its closing result, then notifications/cancelled naming it."""
        if not self.listens:
            return
        ids = list(self.listens)
        if graceful:
            self.server.listeners.shutdown()
            gevent.joinall(list(self.listens.values()), timeout=LISTEN_CLOSE_TIMEOUT_S)
            for listen_id in ids:
                self.publish({"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": listen_id, "reason": "server shutting down"}})
        gevent.killall(list(self.listens.values()), timeout=1.0)

    def serve(self) -> None:
        """Read until EOF, then let running requests finish and their answers flush; on SIGTERM stop at once."""
        writer = gevent.spawn(self.write_forever)
        self.server.connect_local(self.session, self.publish)
        graceful = True
        try:
            for line in self.reader:
                self.handle_line(line)
            # EOF: nobody reads a listen any more; the answers to what the client sent are still owed.
            graceful = False
            self.end_listens(graceful=False)
            gevent.joinall(list(self.running), timeout=DRAIN_TIMEOUT_S)
            gevent.sleep(0)
        finally:
            self.end_listens(graceful)
            # Closing first lets the writer flush what is queued, and drops answers of calls killed below.
            self.server.disconnect_local(self.session.id)
            self.outbox.close("connection closed")
            # After SIGTERM (the client gave up waiting) or the drain timeout, calls in flight are cancelled.
            gevent.killall(list(self.running), timeout=1.0)
            writer.join(timeout=2.0)


def run_stdio(server: Server) -> int:
    """Serve one client on stdin/stdout until EOF or SIGTERM; no caller: the local user may use everything."""
    configure_logging(server.settings.log_level, server.settings.log_format)
    protocol_out = claim_stdout()
    connection = StdioConnection(server, FileObject(sys.stdin.buffer, "rb"), protocol_out)
    main = gevent.getcurrent()
    gevent.signal_handler(signal.SIGTERM, lambda: gevent.kill(main, SystemExit))
    log.info("serving MCP on stdio")
    try:
        connection.serve()
    except (SystemExit, KeyboardInterrupt):
        log.info("stdio server stopping")
    return 0

"""The gunicorn worker: gevent's, except that gunicorn's own refusals of malformed HTTP answer as JSON, and that it
takes event streams over from their requests.

gunicorn answers a request it cannot parse (a bad request line, a too-long URI, too many or
too large headers, a broken chunked body) before the app sees it, with an HTML page and
none of the app's headers. This worker answers the same statuses with a JSON-RPC error
body and the security headers, and logs the refusal on one line through the `mcp` loggers.

An event stream whose first frame is out leaves its request (stream_handoff.py): a greenlet of the worker's own
writes the rest, holding the socket and the stream only, where gunicorn's request loop would hold its request,
environ, response and a deep stack for the stream's whole life.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping
from functools import partial
from http import HTTPStatus
from ssl import SSLError
from typing import Any

import gevent
from gevent import socket as gevent_socket
from gevent.pool import Group, Pool
from gevent.server import StreamServer
from gunicorn import util
from gunicorn.http.errors import (
    ConfigurationProblem,
    ExpectationFailed,
    ForbiddenProxyRequest,
    InvalidResponseHeader,
    InvalidResponseHeaderName,
    LimitRequestHeaders,
    LimitRequestLine,
    ParseException,
    UnsupportedTransferCoding,
)
from gunicorn.sock import ssl_context
from gunicorn.workers.ggevent import GeventWorker

from flask_mcp_gevent.errors import INTERNAL_ERROR, INVALID_REQUEST, error_response, new_correlation_id
from flask_mcp_gevent.logs import loggable
from flask_mcp_gevent.stream_handoff import HandedOffBody, HandOff

__all__ = ["HeadersWithBody", "McpWorker", "accept_queued", "error_page", "spawn_untracked", "write_handed_off"]

log = logging.getLogger("mcp.http")
# gevent's setting, read from the environment, that says whether each greenlet records its spawning tree.
TRACK_GREENLET_TREE = "GEVENT_TRACK_GREENLET_TREE"
# How gunicorn decides a refusal's status, in its order; anything else a worker raises is a 500.
STATUS_BY_ERROR: tuple[tuple[tuple[type[BaseException], ...], int], ...] = (
    ((InvalidResponseHeader, InvalidResponseHeaderName, ConfigurationProblem), 500),
    ((LimitRequestLine,), 414),
    ((LimitRequestHeaders,), 431),
    ((ForbiddenProxyRequest, SSLError), 403),
    ((ExpectationFailed,), 417),
    ((UnsupportedTransferCoding,), 501),
    ((ParseException,), 400),
)


def status_for(exc: BaseException) -> int:
    """The HTTP status gunicorn gives this error."""
    for kinds, status in STATUS_BY_ERROR:
        if isinstance(exc, kinds):
            return status
    return 500


def explain(status: int, cfg: Any) -> str:
    """What was wrong, and how to fix it, for each status gunicorn answers itself."""
    if status == 414:
        return (f"URI Too Long: the request line is over {cfg.limit_request_line} bytes; "
                "MCP needs only the path and ?session_id=")
    if status == 431:
        return (f"Request Header Fields Too Large: send at most {cfg.limit_request_fields} headers "
                f"of at most {cfg.limit_request_field_size} bytes each")
    if status == 400:
        return "Bad Request: malformed HTTP (request line, headers or chunked body); send well-formed HTTP/1.1"
    if status == 501:
        return "Not Implemented: unsupported Transfer-Encoding; send the body with Content-Length or chunked"
    return HTTPStatus(status).phrase


def error_page(status: int, message: str, data: Any = None) -> bytes:
    """A whole HTTP/1.1 response: status line, security headers, a JSON-RPC error body; the connection closes."""
    # Imported here, in a worker: the master loads this class before forking, and Flask belongs in the workers.
    from flask_mcp_gevent.web.response_headers import SECURITY_HEADERS_WITH_CACHE

    code = INTERNAL_ERROR if status >= HTTPStatus.INTERNAL_SERVER_ERROR else INVALID_REQUEST
    body = (json.dumps(error_response(None, code, message, data), separators=(",", ":")) + "\n").encode()
    head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", "Connection: close", "Content-Type: application/json",
            f"Content-Length: {len(body)}", *(f"{name}: {value}" for name, value in SECURITY_HEADERS_WITH_CACHE)]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def accept_queued(server: StreamServer) -> int:
    """Hand every connection waiting in the server's accept queue to its handler, without blocking; how many."""
    taken = 0
    while True:
        try:
            accepted = server.do_read()
        except OSError:
            return taken
        if not accepted:
            return taken
        server.do_handle(*accepted)
        taken += 1


def spawn_untracked(environ: Mapping[str, str]) -> None:
    """Have gevent's greenlets record no spawning tree, unless the environment sets GEVENT_TRACK_GREENLET_TREE.

    gevent keeps, for every greenlet, its spawner and spawning stack: a debugging aid that costs time at every spawn
    and 0.2 KiB per connection, held for the connection's whole life (an idle SSE stream's, for hours).
    """
    if TRACK_GREENLET_TREE not in environ:
        gevent.config.track_greenlet_tree = False


def send_whole(sock: Any, data: bytes) -> None:
    """Send all of data: in one send while the socket's buffer has room, the rest with sendall.

    gevent's sendall first asks the kernel for the buffer's size (a getsockopt per write) to cut the data into
    chunks; an answer or an event is almost always one send.
    """
    sent = sock.send(data)
    if sent < len(data):
        sock.sendall(memoryview(data)[sent:])


def write_handed_off(sock: Any, body: HandedOffBody, chunked: bool) -> None:
    """Write the rest of an event stream taken over from its request, end it, close the connection.

    chunked: the response went out with Transfer-Encoding: chunked (to HTTP/1.1), so each frame is a chunk and the
    last chunk ends it; to HTTP/1.0 the frames go as they are and the close ends it.
    """
    try:
        for frame in body.frames:
            if frame:  # an empty frame asks a server to let go of the last one: nothing here holds it
                send_whole(sock, b"%X\r\n%s\r\n" % (len(frame), frame) if chunked else frame)
        if chunked:
            send_whole(sock, b"0\r\n\r\n")
    except OSError:
        log.debug("the client of a stream is gone")
    finally:
        try:
            body.end()
        finally:
            sock.close()


class NamedListener:
    """A listening socket whose name is read once, up front.

    gunicorn's handler asks the listener for its name only after it has read the client's first bytes; by then
    stop_accepting may have closed the socket, and the name would be EBADF (a traceback for a request that is fine).
    """

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.name = sock.getsockname()

    def getsockname(self) -> Any:
        """The socket's name, as it was when the worker started."""
        return self.name

    def __getattr__(self, attribute: str) -> Any:
        """Everything else from the socket itself."""
        return getattr(self.sock, attribute)


class HeadersWithBody:
    """A client socket that sends a response's header block in the same send as the body that follows it.

    gunicorn writes the status line and headers, then the body, in two `sendall`s: two system calls and, often,
    two packets for a small JSON answer. A header block that declares a Content-Length is held until the next
    send (gunicorn's `Response.write` sends the body right after it) or until the request ends; a streamed
    response (chunked, no length) goes out at once, so a client sees an event stream open before its first event.
    """

    # One per request, held for a stream's whole life.
    __slots__ = ("held", "sock", "takes_streams")

    def __init__(self, sock: Any, takes_streams: bool = False) -> None:
        self.sock = sock
        self.held = b""
        # Whether the worker takes an event stream over from its request (stream_handoff.hands_off asks).
        self.takes_streams = takes_streams

    def sendall(self, data: bytes) -> None:
        """Send data, after any header block held for it; hold a header block that a body will follow."""
        if self.held:
            data, self.held = self.held + data, b""
        elif data.startswith(b"HTTP/") and data.endswith(b"\r\n\r\n") and b"\r\ncontent-length:" in data.lower():
            self.held = data
            return
        send_whole(self.sock, data)

    def send(self, data: bytes) -> int:
        """Send what is held first, then data as the socket would."""
        self.flush()
        return int(self.sock.send(data))

    def sendfile(self, file: Any, offset: int = 0, count: int | None = None) -> int:
        """Send what is held first, then the file as the socket would."""
        self.flush()
        return int(self.sock.sendfile(file, offset, count))

    def flush(self) -> None:
        """Send a header block still held (a response without a body: HEAD, 204, 304, a zero length)."""
        if self.held:
            data, self.held = self.held, b""
            try:
                self.sock.sendall(data)
            except OSError:
                log.debug("could not send a response's headers: the client is gone")

    def __getattr__(self, attribute: str) -> Any:
        """Everything else from the socket itself."""
        return getattr(self.sock, attribute)


class McpWorker(GeventWorker):
    """gunicorn's gevent worker, answering malformed HTTP with JSON instead of an HTML page.

    It also stops accepting connections the moment SIGTERM arrives. gunicorn's own loop notices only
    at its next tick (up to a second later), and the listening socket is shared: on a reload the new
    workers are already accepting, on a stop the master has closed its copy. A connection this worker
    took in that second would open a stream on a worker that has just closed its streams, or be
    refused with "shutting down", where a refused connection sends it to a worker that stays.
    """

    servers: list[StreamServer]
    # The writers of the event streams taken over from their requests, which the drain waits for too.
    handed_off: Group
    # Whether this worker takes streams over: not under TLS, where the socket's state is gunicorn's SSL object's.
    takes_streams = False

    def init_process(self) -> None:
        """Start as gevent's worker does, its greenlets without a record of who spawned them (spawn_untracked)."""
        spawn_untracked(os.environ)
        super().init_process()

    def run(self) -> None:
        """Serve every listener, beat the heartbeat, then drain until graceful_timeout: the gevent worker's job.

        gunicorn's own loop (27.0.1) keeps its servers to itself; this one keeps them, so handle_exit can close
        them at once. Recheck it against gunicorn's when the pin moves.
        """
        self.servers = []
        self.handed_off = Group()
        self.takes_streams = not self.cfg.is_ssl
        ssl_args = {"ssl_context": ssl_context(self.cfg)} if self.cfg.is_ssl else {}
        for listener in self.sockets:
            listener.setblocking(1)
            server = StreamServer(listener, handle=partial(self.handle, NamedListener(listener)),
                                  spawn=Pool(self.worker_connections), **ssl_args)
            if self.cfg.workers > 1:
                server.max_accept = 1
            server.start()
            self.servers.append(server)
        while self.alive:
            self.notify()
            gevent.sleep(1.0)
        self.stop_accepting()
        # Handle the connections in progress until graceful_timeout, then stop them (as gunicorn does).
        started = time.time()
        while time.time() - started <= self.cfg.graceful_timeout:
            if (all(server.pool.free_count() == server.pool.size for server in self.servers)
                    and len(self.handed_off) == 0):
                return
            self.notify()
            gevent.sleep(1.0)
        self.log.warning("Worker graceful timeout (pid:%s)", self.pid)
        for server in self.servers:
            server.stop(timeout=1)
        self.handed_off.kill(timeout=1)

    def stop_accepting(self) -> None:
        """Close the listening servers (idempotent), first serving the connections already queued on them.

        The kernel resets a connection still waiting in the accept queue when the last copy of the socket
        closes (on a stop, the master has closed its copy already): a balancer would pass that on as a 502.
        """
        for server in getattr(self, "servers", ()):
            if not server.closed:
                server.stop_accepting()
                if accept_queued(server):
                    gevent.sleep(0)  # let their handlers start
                server.close()

    def handle_request(self, listener_name: Any, req: Any, sock: Any, addr: Any) -> bool:
        """Serve one request; once the worker is stopping, close its connection after it.

        gunicorn decides keep-alive when a response starts: a stream that began before SIGTERM and ended
        because of it would leave its connection open for another request, and a balancer's pool would
        send the client's reconnect straight back to this worker. The response's headers go out with its body
        (`HeadersWithBody`).
        """
        response_socket = HeadersWithBody(sock, self.takes_streams)
        try:
            kept = super().handle_request(listener_name, req, response_socket, addr)
        except HandOff as handoff:
            self.take_over(response_socket, handoff.body, chunked=req.version > (1, 0))
            raise StopIteration() from None  # the request is over; its connection is the stream's now
        finally:
            response_socket.flush()
        if not self.alive:
            raise StopIteration()
        return kept

    def take_over(self, response_socket: HeadersWithBody, body: HandedOffBody, chunked: bool) -> None:
        """Write a stream that left its request from a greenlet of its own, on the connection gunicorn lets go of."""
        sock = response_socket.sock
        try:
            family, kind, proto = sock.family, sock.type, sock.proto
            # Detached, gunicorn's socket object closes nothing when its request loop ends: the connection stays.
            own = gevent_socket.socket(family, kind, proto, fileno=sock.detach())
        except (OSError, ValueError):  # closed under it: no descriptor to take
            log.debug("the client of a stream left as it was handed off")
            body.end()
            return
        # A cut-off (event_stream.SocketShutdown holds this wrapper) shuts the stream's socket down from now on.
        response_socket.sock = own
        self.handed_off.spawn(write_handed_off, own, body, chunked)

    def handle_exit(self, sig: int, frame: Any) -> None:
        """SIGTERM: stop accepting now, then let gunicorn's loop wind the worker down."""
        super().handle_exit(sig, frame)
        gevent.spawn(self.stop_accepting)

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """Log the refusal on one line and answer it as JSON with the security headers."""
        status = status_for(exc)
        data = None
        if status >= 500:
            correlation_id = new_correlation_id()
            data = {"correlationId": correlation_id}
            log.error("error handling a request (correlation id %s)", correlation_id, exc_info=exc)
            message = "Internal error"
        else:
            log.info("http malformed request status=%d error=%s", status, loggable(str(exc)))
            message = explain(status, self.cfg)
        try:
            util.write_nonblock(client, error_page(status, message, data))
        except OSError:
            log.debug("could not send the %d answer: the client is gone", status)

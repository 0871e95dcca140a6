"""Protocol-layer fixtures: JSON text in, the JSON messages the server answers with out, no HTTP.

`rpc(text)` plays a transport: it parses the body, hands it to `Server.accept`, waits
for every request's greenlet and returns the responses (immediate errors first, then
each request's answer in order). Whatever the server sent through `send` (notifications,
server-to-client requests) is kept in `rpc.sent`.
"""

from __future__ import annotations

import logging
from typing import Any

import gevent
import pytest

from flask_mcp_gevent.auth.permissions import Grants
from flask_mcp_gevent.auth.principal import API_KEY, Principal
from flask_mcp_gevent.config import Settings
from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.messages import ParseFailure, parse_body
from flask_mcp_gevent.server import Server
from flask_mcp_gevent.session import Session
from mcp_tools import Registry

# Generous: every call here is in-process and finishes in milliseconds.
JOIN_TIMEOUT_S = 10.0


class Rpc:
    """Send JSON text to one session of a server and collect what comes back."""

    def __init__(self, server: Server, session: Session, caller: Principal | None = None) -> None:
        self.server = server
        self.session = session
        # Who sends every body (None: nobody is checked, as with authentication off).
        self.caller = caller
        self.sent: list[dict[str, Any]] = []

    def __call__(self, text: str | bytes) -> list[dict[str, Any]]:
        """Dispatch one body; return the responses it produced, as a transport would deliver them."""
        data = text.encode() if isinstance(text, str) else text
        try:
            body = parse_body(data)
        except ParseFailure as failure:
            return [failure.response]
        refused = self.server.batch_error(self.session, body)  # as every transport checks first
        if refused is not None:
            return [refused]
        greenlets, errors = self.server.accept(self.session, body, self.sent.append, caller=self.caller)
        finished = gevent.joinall(greenlets, timeout=JOIN_TIMEOUT_S)
        assert len(finished) == len(greenlets), "a request did not finish in time"
        for greenlet in greenlets:
            assert greenlet.successful(), f"a request greenlet raised {greenlet.exception!r}"
        answers = [g.value for g in greenlets if g.value is not None]
        # What goes on the wire must survive a JSON round trip unchanged.
        return [loads(dumps(m)) for m in [*errors, *answers]]

    def one(self, text: str | bytes) -> dict[str, Any]:
        """Dispatch one body that must produce exactly one response, and return it."""
        responses = self(text)
        assert len(responses) == 1, f"expected one response, got {responses!r}"
        return responses[0]

    def request(self, method: str, params: dict[str, Any] | None = None, request_id: Any = 1) -> dict[str, Any]:
        """Send one request built from its parts and return its response."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        return self.one(dumps(message))

    def initialize(self, version: str = "2025-06-18", capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run initialize and notifications/initialized; return the initialize result."""
        response = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": capabilities or {},
                "clientInfo": {"name": "protocol-tests", "version": "0"},
            },
            request_id="init",
        )
        assert "result" in response, response
        assert self('{"jsonrpc": "2.0", "method": "notifications/initialized"}') == []
        return response["result"]


@pytest.fixture
def registry() -> Registry | None:
    """The registry the server uses; None means discover mcp_tools. Override to test other tools."""
    return None


@pytest.fixture
def make_server():
    """Build servers from an environ mapping (optionally a registry); shut them all down after."""
    servers: list[Server] = []

    def make(environ: dict[str, str] | None = None, registry: Registry | None = None) -> Server:
        instance = Server(Settings.from_environ(environ or {}), registry=registry)
        servers.append(instance)
        return instance

    yield make
    for instance in servers:
        # Also stops the in-memory store's reaper greenlet.
        instance.shutdown()


@pytest.fixture
def server(make_server, registry) -> Server:
    """A server on the in-memory store with default settings."""
    return make_server(registry=registry)


@pytest.fixture
def rpc(server) -> Rpc:
    """A fresh, uninitialized session of server."""
    return Rpc(server, server.open_session("sse"))


@pytest.fixture
def make_rpc(server):
    """Open sessions: make_rpc(version) returns one initialized at version (None: uninitialized)."""

    def make(version: str | None = None, on: Server | None = None) -> Rpc:
        target = on if on is not None else server
        client = Rpc(target, target.open_session("sse"))
        if version is not None:
            client.initialize(version)
        return client

    return make


@pytest.fixture
def mcp_log(caplog):
    """Capture the `mcp` loggers even after configure_logging() stopped them propagating to root."""
    logger = logging.getLogger("mcp")
    logger.addHandler(caplog.handler)
    caplog.handler.setLevel(logging.DEBUG)
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)


def caller(name: str, tools: tuple[str, ...] = (), resources: tuple[str, ...] = (),
           prompts: tuple[str, ...] = ()) -> Principal:
    """A caller named name whose credential grants these patterns, as an API key's would."""
    return Principal(name=name, grants=Grants(tools=tools, resources=resources, prompts=prompts), via=API_KEY)

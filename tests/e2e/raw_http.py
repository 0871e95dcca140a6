"""Raw HTTP over a socket, for requests httpx will not send: malformed lines, bad chunks, duplicate keys."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any

READ_TIMEOUT_S = 15.0


@dataclass
class RawResponse:
    """One HTTP/1.1 response as it came off the wire."""

    status: int
    headers: dict[str, str]
    body: bytes
    rest: bytes

    def json(self) -> Any:
        """The body, decoded."""
        return json.loads(self.body)


def exchange(port: int, data: bytes) -> RawResponse:
    """Send data, read until the server closes the connection (bounded), and parse the first response."""
    with socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT_S) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, after = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    length = int(headers.get("content-length", len(after)))
    return RawResponse(int(status_line.split()[1]), headers, after[:length], after[length:])


def post(port: int, body: bytes, headers: dict[str, str] | None = None, path: str = "/mcp") -> bytes:
    """A POST with a Content-Length body and Connection: close, as raw bytes."""
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             "Accept: application/json, text/event-stream", f"Content-Length: {len(body)}", "Connection: close",
             *(f"{name}: {value}" for name, value in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

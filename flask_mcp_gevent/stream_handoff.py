"""An event stream handed off from its HTTP request: once its first frame is out, a greenlet of its own writes the rest.

Under gunicorn a response is written by the greenlet that read its request, from inside gunicorn's request loop,
which holds the parsed request, the WSGI environ, the response and that greenlet's deep stack for as long as the
body lasts: for an idle event stream, hours, and most of what an idle session costs (bench/RESULTS.md, "Idle legacy
SSE session"). A server that can take a stream over (the worker, serving/gunicorn_worker.py) says so on the socket
it puts in the environ. The stream's body then sends its first frame (and with it the status and headers) the usual
way and leaves the request by raising HandOff; the worker writes the rest from a greenlet that holds only the socket
and the stream, and runs the stream's ends (its address's count, say) when it is over.

A leaf module: the transports make such bodies, the worker takes them, and neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["HandOff", "HandedOffBody", "hands_off", "stream_body"]


class HandOff(BaseException):
    """A stream's body leaving gunicorn's write loop; its server takes the rest over.

    A BaseException, so that gunicorn's handlers of Exception (which would log it and close the socket) let it
    through to the worker that catches it.
    """

    def __init__(self, body: HandedOffBody) -> None:
        super().__init__("event stream handed off")
        self.body = body


class HandedOffBody:
    """An event stream's body: its first frame through the server, then HandOff; the rest for the server's writer."""

    # Held for the stream's whole life.
    __slots__ = ("ends", "frames", "handed_off", "started")

    def __init__(self, frames: Iterator[bytes]) -> None:
        self.frames = frames
        self.started = False
        self.handed_off = False
        # What runs when a handed-off stream is over (the WSGI layers' own close, which came at the hand-off).
        self.ends: list[Callable[[], None]] = []

    def __iter__(self) -> HandedOffBody:
        """The body is its own iterator."""
        return self

    def __next__(self) -> bytes:
        """The first frame; then leave the request."""
        if self.started:
            self.handed_off = True
            raise HandOff(self)
        self.started = True
        return next(self.frames)

    def close(self) -> None:
        """End the stream, unless it was handed off: its writer ends it when it is over."""
        if not self.handed_off:
            self.end()

    def end(self) -> None:
        """Close the frames (the stream's own cleanup runs), then run the ends, each once."""
        try:
            close = getattr(self.frames, "close", None)
            if close is not None:
                close()
        finally:
            ends, self.ends = self.ends, []
            for end in ends:
                end()


def hands_off(environ: Mapping[str, Any]) -> bool:
    """Whether the server of this request takes event streams over (its socket in the environ says so)."""
    return getattr(environ.get("gunicorn.socket"), "takes_streams", False) is True


def stream_body(environ: Mapping[str, Any], frames: Iterator[bytes]) -> Iterator[bytes]:
    """An event stream's frames as the response body: handed off where the server takes streams, else as they are."""
    return HandedOffBody(frames) if hands_off(environ) else frames

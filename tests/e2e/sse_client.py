"""A small blocking SSE reader for raw-HTTP tests: what curl -N shows, as parsed events."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class Event:
    """One server-sent event."""

    event: str
    data: str
    id: str | None
    retry: str | None = None

    def json(self) -> Any:
        """The event's data decoded as JSON."""
        return json.loads(self.data)


class EventParser:
    """Turns SSE lines into events, one line at a time; comments (keepalives) are skipped."""

    def __init__(self, keep_empty: bool = False) -> None:
        # keep_empty: also yield events without data, such as SEP-1699 priming events (an id, a retry, no data).
        self.keep_empty = keep_empty
        self.reset()

    def reset(self) -> None:
        """Start a new event."""
        self.event, self.data, self.id, self.retry, self.seen = "message", [], None, None, False

    def feed(self, line: str) -> Event | None:
        """Take one line; return the event a blank line completes."""
        if line == "":
            done = None
            if self.data or (self.keep_empty and self.seen):
                done = Event(self.event, "\n".join(self.data), self.id, self.retry)
            self.reset()
            return done
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        self.seen = True
        if field == "event":
            self.event = value
        elif field == "data":
            self.data.append(value)
        elif field == "id":
            self.id = value
        elif field == "retry":
            self.retry = value
        return None


def iter_events(response: httpx.Response, keep_empty: bool = False) -> Iterator[Event]:
    """Parse an SSE response body into events."""
    parser = EventParser(keep_empty)
    for line in response.iter_lines():
        event = parser.feed(line)
        if event is not None:
            yield event

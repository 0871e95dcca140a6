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

    def json(self) -> Any:
        """The event's data decoded as JSON."""
        return json.loads(self.data)


def iter_events(response: httpx.Response) -> Iterator[Event]:
    """Parse an SSE response body into events; comments (keepalives) are skipped."""
    event, data, event_id = "message", [], None
    for line in response.iter_lines():
        if line == "":
            if data:
                yield Event(event, "\n".join(data), event_id)
            event, data, event_id = "message", [], None
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
            elif field == "id":
                event_id = value

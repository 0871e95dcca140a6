"""Content blocks a tool, resource or prompt may return beyond plain values.

Return a plain value from a tool and the server wraps it as text (and as
`structuredContent`). Return a `ToolResult` to choose the blocks yourself.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolResult", "audio", "embedded_resource", "image", "resource_link", "text"]


def text(value: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": value}


def image(data: bytes, mime_type: str) -> dict[str, Any]:
    """An image content block from raw bytes."""
    return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}


def audio(data: bytes, mime_type: str) -> dict[str, Any]:
    """An audio content block from raw bytes."""
    return {"type": "audio", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}


def embedded_resource(uri: str, text_value: str | None = None, *, blob: bytes | None = None,
                      mime_type: str | None = None) -> dict[str, Any]:
    """A resource embedded in a result, as text or as a base64 blob."""
    contents: dict[str, Any] = {"uri": uri}
    if mime_type:
        contents["mimeType"] = mime_type
    if blob is not None:
        contents["blob"] = base64.b64encode(blob).decode("ascii")
    else:
        contents["text"] = text_value or ""
    return {"type": "resource", "resource": contents}


def resource_link(uri: str, name: str, *, description: str | None = None,
                  mime_type: str | None = None) -> dict[str, Any]:
    """A link to a resource the client may read later."""
    link: dict[str, Any] = {"type": "resource_link", "uri": uri, "name": name}
    if description:
        link["description"] = description
    if mime_type:
        link["mimeType"] = mime_type
    return link


@dataclass
class ToolResult:
    """A tool result with explicit content blocks and optional structured content."""

    content: list[dict[str, Any]] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False

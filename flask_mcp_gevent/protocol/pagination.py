"""Opaque cursors for list methods: clients pass back what we gave them, nothing else."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from flask_mcp_gevent.errors import INVALID_PARAMS, RpcError

__all__ = ["paginate"]

PREFIX = "o:"


def encode_cursor(offset: int) -> str:
    """Turn a list offset into an opaque cursor."""
    return base64.urlsafe_b64encode(f"{PREFIX}{offset}".encode()).decode().rstrip("=")


def decode_cursor(cursor: Any) -> int:
    """Turn a cursor back into an offset; raise -32602 when it is not one of ours."""
    try:
        if not isinstance(cursor, str) or len(cursor) > 64:
            raise ValueError
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if not raw.startswith(PREFIX):
            raise ValueError
        offset = int(raw[len(PREFIX):])
        # Only the form encode_cursor makes: int() would also read "+5", " 5", "0_5" or other scripts' digits, and
        # no page but the first starts at 0.
        if offset <= 0 or raw != f"{PREFIX}{offset}":
            raise ValueError
        return offset
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise RpcError(INVALID_PARAMS, "Invalid params: unknown cursor; start again without one") from None


def paginate(items: Sequence[Any], cursor: Any, page_size: int) -> tuple[list[Any], str | None]:
    """Return one page of items and the cursor for the next page (None at the end)."""
    offset = 0 if cursor is None else decode_cursor(cursor)
    if offset > len(items):
        raise RpcError(INVALID_PARAMS, "Invalid params: cursor is past the end of the list")
    page = list(items[offset : offset + page_size])
    end = offset + len(page)
    return page, (encode_cursor(end) if end < len(items) else None)

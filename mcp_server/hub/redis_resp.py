"""The Redis protocol (RESP2) both ways, by hiredis (C): commands packed into one bytes object, replies parsed."""

from __future__ import annotations

from typing import Any

import hiredis
from redis._parsers.base import BaseParser
from redis.exceptions import RedisError

__all__ = ["HiredisParser", "is_error_reply", "pack", "reply_or_raise", "reply_parser"]


# One command (a tuple) in RESP: arguments are str (sent as UTF-8), bytes, int or float; TypeError for anything else.
pack = hiredis.pack_command


class HiredisParser:
    """Replies out of the bytes a connection receives, as redis-py gives them undecoded.

    Bulk and simple strings are bytes, integers int, a nil None, arrays lists; an error reply is the exception
    redis-py would raise for it (NoScriptError for NOSCRIPT, ReadOnlyError for READONLY...), returned, not raised.
    """

    def __init__(self) -> None:
        self.reader = hiredis.Reader(protocolError=ValueError, replyError=BaseParser.parse_error)

    def feed(self, data: bytes) -> list[Any]:
        """Every reply completed by data, in order; a reply cut short waits for the next feed."""
        reader = self.reader
        reader.feed(data)
        replies = []
        reply = reader.gets()
        while reply is not False:
            replies.append(reply)
            reply = reader.gets()
        return replies


def reply_parser() -> HiredisParser:
    """A parser of one connection's replies."""
    return HiredisParser()


def is_error_reply(reply: Any) -> bool:
    """Whether a parsed reply is an error reply: any RedisError, not only a ResponseError.

    Some error replies are, for redis-py, not a ResponseError: LOADING (a restarted Redis reading its data back)
    is a BusyLoadingError, NOAUTH an AuthenticationError, both ConnectionErrors, which redis-py raises itself.
    """
    return isinstance(reply, RedisError)


def reply_or_raise(reply: Any) -> Any:
    """A command's reply, or its error reply raised."""
    if isinstance(reply, RedisError):  # is_error_reply, inline: every command's reply passes here
        raise reply
    return reply

"""The Redis protocol (RESP2) both ways: commands packed into one bytes object, replies parsed from a byte stream."""

from __future__ import annotations

from typing import Any

from redis._parsers.base import BaseParser
from redis.exceptions import ResponseError

try:  # hiredis (requirements.txt pins it) parses replies in C; without it, RespParser does the same in Python
    import hiredis

    HAS_HIREDIS = True
except ImportError:  # pragma: no cover - a deployment that left it out
    HAS_HIREDIS = False

__all__ = ["HiredisParser", "RespParser", "pack", "pack_arguments", "pack_bytes", "pack_unique",
           "reply_parser", "reply_or_raise"]

CRLF = b"\r\n"


# The length headers of arguments up to this many bytes, made once: formatting bytes is dear per argument.
LENGTH_HEADERS = [b"$%d\r\n" % size for size in range(1024)]
# Text arguments packed already, by value: at most this many, each of at most this many bytes. Only text is kept
# here, so a lookup by any argument is exact: True, 1 and 1.0 are equal keys, but none of them equals a str.
PACKED_MAX_ENTRIES = 8192
PACKED_MAX_BYTES = 256
_packed: dict[str, bytes] = {}
# Integer arguments are remembered the same way, apart (a script's limits and TTLs come back every call).
_packed_ints: dict[int, bytes] = {}


def pack(args: tuple[Any, ...] | list[Any]) -> bytes:
    """One command in the Redis protocol (RESP), as one bytes object: arguments are str, bytes or int."""
    return b"*%d\r\n" % len(args) + pack_arguments(args)


def pack_arguments(args: tuple[Any, ...] | list[Any]) -> bytes:
    """A command's arguments in RESP, without the count that heads the command.

    A short text argument is packed once and remembered (a session's key names and a script's fixed arguments
    come back with every call), so a command of known arguments costs one lookup each, made in C by map; the
    memory is bounded by forgetting them all when it is full.
    """
    pieces: list[Any]  # bytes, None where the argument is not remembered
    try:
        pieces = list(map(_packed.get, args))
    except TypeError:  # an unhashable argument (a bytearray): each is packed on its own
        pieces = [None] * len(args)
    if None in pieces:
        pieces = [piece or _packed_miss(arg) for piece, arg in zip(pieces, args, strict=True)]
    return b"".join(pieces)


def pack_unique(text: str) -> bytes:
    """A text argument that never comes back (a token) in RESP, without remembering it as pack_arguments would."""
    return pack_bytes(text.encode())


def _packed_miss(arg: Any) -> bytes:
    """One argument the remembered text did not have, in RESP."""
    kind = type(arg)
    if kind is bytes:  # a message: the commonest argument never remembered
        return pack_bytes(arg)
    if kind is int:  # a number sent as such (the hub's own scripts send theirs as text)
        return _packed_ints.get(arg) or _packed_once(arg)
    if kind is str:  # new text (a token): packed, and remembered if short
        return _packed_once(arg)
    return _packed_argument(arg)


def _packed_argument(arg: Any) -> bytes:
    """A bytes-like argument other than bytes, in RESP; TypeError for anything Redis cannot take."""
    if not isinstance(arg, (bytearray, memoryview)):
        raise TypeError(f"cannot send a {type(arg).__name__} to Redis")
    return pack_bytes(bytes(arg))


def pack_bytes(data: bytes) -> bytes:
    """Bytes as one RESP bulk string: the length header, the bytes, CRLF (an argument never remembered)."""
    size = len(data)
    return (LENGTH_HEADERS[size] if size < 1024 else b"$%d\r\n" % size) + data + CRLF


def _packed_once(arg: str | int) -> bytes:
    """One text or integer argument in RESP, remembered when it is short."""
    data = arg.encode() if type(arg) is str else str(arg).encode()
    piece = pack_bytes(data)
    if len(data) <= PACKED_MAX_BYTES:
        if isinstance(arg, str):
            _remember(_packed, arg, piece)
        else:
            _remember(_packed_ints, arg, piece)
    return piece


def _remember(known: dict[Any, bytes], arg: Any, piece: bytes) -> None:
    """Keep an argument's RESP; unique values (tokens) fill the memory up slowly: when full, it starts again."""
    if len(known) >= PACKED_MAX_ENTRIES:
        known.clear()
    known[arg] = piece


class Incomplete(Exception):
    """The buffer ends inside a reply: wait for more bytes (at least `needed` from the reply's start)."""

    def __init__(self, needed: int) -> None:
        super().__init__(needed)
        self.needed = needed


class RespParser:
    """Replies out of the bytes a connection receives, as redis-py gives them undecoded.

    Bulk and simple strings are bytes, integers int, a nil None, arrays lists; an error reply is the exception
    redis-py would raise for it (NoScriptError for NOSCRIPT, ReadOnlyError for READONLY...), returned, not raised.
    """

    def __init__(self) -> None:
        # The start of a reply cut short, in the pieces received, and how many bytes it needs at least.
        self.pieces: list[bytes] = []
        self.held = 0
        self.needed = 0

    @property
    def buffer(self) -> bytes:
        """The bytes received and not yet parsed into a reply."""
        return b"".join(self.pieces)

    def feed(self, data: bytes) -> list[Any]:
        """Every reply completed by data, in order; a reply cut short waits for the next feed.

        A large reply arriving in many pieces is joined and parsed once it can be whole, not at every piece.
        """
        if self.pieces:
            self.pieces.append(data)
            self.held += len(data)
            if self.held < self.needed:
                return []
            buffer = b"".join(self.pieces)
        else:
            buffer = data
        replies = []
        position, end = 0, len(buffer)
        self.needed = 0
        while position < end:
            try:
                reply, position_after = self._parse(buffer, position)
            except Incomplete as cut:
                self.needed = cut.needed - position
                break
            replies.append(reply)
            position = position_after
        rest = buffer[position:] if position else buffer
        self.pieces = [rest] if rest else []
        self.held = len(rest)
        return replies

    def _parse(self, buffer: bytes, position: int) -> tuple[Any, int]:
        """One reply starting at position, and where the next one starts."""
        line_end = buffer.find(CRLF, position)
        if line_end < 0:
            raise Incomplete(len(buffer) + 1)
        kind = buffer[position]
        line = buffer[position + 1:line_end]
        after = line_end + 2
        if kind == 36:  # $ bulk string
            size = int(line)
            if size < 0:
                return None, after
            if len(buffer) < after + size + 2:
                raise Incomplete(after + size + 2)
            return buffer[after:after + size], after + size + 2
        if kind == 58:  # : integer
            return int(line), after
        if kind == 42:  # * array
            count = int(line)
            if count < 0:
                return None, after
            items = []
            for _ in range(count):
                item, after = self._parse(buffer, after)
                items.append(item)
            return items, after
        if kind == 43:  # + simple string
            return line, after
        if kind == 45:  # - error
            return BaseParser.parse_error(line.decode("utf-8", "replace")), after
        raise ValueError(f"not a Redis reply: {bytes([kind])!r}")


class HiredisParser:
    """RespParser's replies, parsed by hiredis's C reader: the same values, about ten times faster."""

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


def reply_parser() -> RespParser | HiredisParser:
    """The fastest reply parser installed."""
    return HiredisParser() if HAS_HIREDIS else RespParser()


def reply_or_raise(reply: Any) -> Any:
    """A command's reply, or its error reply raised."""
    if isinstance(reply, ResponseError):
        raise reply
    return reply

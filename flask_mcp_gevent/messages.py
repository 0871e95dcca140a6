"""Classify an incoming body: request, notification, client response, batch, or invalid.

This replaces jsonrpcserver's per-request schema validation with cheaper checks
that also enforce MCP's rules: ids are strings or integers (never null, bool or
object), params are an object, and `_meta` is taken out before dispatch. A message
that repeats an envelope key, or holds an integer past 64 bits, is refused: orjson
would keep the last key (where a proxy may read the first) and round the integer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from flask_mcp_gevent.encoding import loads, loads_exact
from flask_mcp_gevent.errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, error_response

__all__ = ["Body", "Message", "ParseFailure", "parse_body", "classify"]

REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
INVALID = "invalid"
ENVELOPE_KEYS = ("jsonrpc", "id", "method", "params", "result", "error")
ENVELOPE_KEY_SET = frozenset(ENVELOPE_KEYS)
QUOTED_ENVELOPE_KEYS = tuple(f'"{key}"'.encode() for key in ENVELOPE_KEYS)
# The integers orjson reads exactly; any other has at least 19 digits.
INT64_MIN = -(2**63)
UINT64_MAX = 2**64 - 1
# A number long enough to overflow shows as 19 zeros once every digit reads as one: translate is a
# single C pass, about a sixth of what a regular expression's search costs over a call's body.
DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
LONG_NUMBER = b"0" * 19
# orjson reads no deeper JSON than this: a body past it is refused before MCP_MAX_JSON_DEPTH is checked.
ORJSON_MAX_DEPTH = 1024


@dataclass
class Message:
    """One JSON-RPC message, classified; `error` is set when kind is invalid."""

    kind: str
    raw: Any
    id: Any = None
    method: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None


@dataclass
class Body:
    """A parsed POST body: its messages and whether it was a batch."""

    messages: list[Message]
    is_batch: bool

    @property
    def request_id(self) -> Any:
        """The id of a body that is one message with a readable id (for errors answered before dispatch)."""
        return self.messages[0].id if not self.is_batch and len(self.messages) == 1 else None


class ParseFailure(ValueError):
    """The body could not be read as JSON-RPC; carries its error response (-32700, or -32600 for what is JSON)."""

    def __init__(self, response: dict[str, Any]) -> None:
        super().__init__(response["error"]["message"])
        self.response = response


def is_valid_id(value: Any) -> bool:
    """MCP ids are strings or integers; null, booleans, floats and objects are not."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def json_kind(value: Any) -> str:
    """What a JSON value that is no id is, in the words an error message uses."""
    if value is None:
        return "null (MCP forbids it)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number with a fraction or exponent"
    return "an object" if isinstance(value, dict) else "an array"


def invalid(raw: Any, message: str, request_id: Any = None, code: int = INVALID_REQUEST) -> Message:
    """Build an invalid Message carrying its error response."""
    return Message(kind=INVALID, raw=raw, id=request_id, error=error_response(request_id, code, message))


def classify(raw: Any) -> Message:
    """Classify one decoded JSON-RPC message."""
    if not isinstance(raw, dict):
        return invalid(raw, "Invalid Request: a JSON-RPC message must be a JSON object")
    readable_id = raw.get("id") if is_valid_id(raw.get("id")) else None
    if raw.get("jsonrpc") != "2.0":
        return invalid(raw, 'Invalid Request: "jsonrpc" must be exactly "2.0"', readable_id)
    if "method" not in raw:
        if ("result" in raw) != ("error" in raw) and is_valid_id(raw.get("id")):
            return Message(kind=RESPONSE, raw=raw, id=raw["id"])
        return invalid(raw, 'Invalid Request: missing "method" (or "id" with "result"/"error")', readable_id)
    method = raw["method"]
    if not isinstance(method, str) or not method:
        return invalid(raw, 'Invalid Request: "method" must be a non-empty string', readable_id)
    has_id = "id" in raw
    if has_id and not is_valid_id(raw["id"]):
        return invalid(raw, f'Invalid Request: "id" must be a string or an integer, not {json_kind(raw["id"])}')
    params = raw.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return invalid(raw, 'Invalid params: "params" must be an object', readable_id, INVALID_PARAMS)
    meta = params.get("_meta")
    if meta is not None:
        params = {k: v for k, v in params.items() if k != "_meta"}
        if isinstance(meta, dict) and not is_progress_token(meta.get("progressToken", "")):
            # Echoed in every notifications/progress: a client matches it to its request only as a string or number.
            return invalid(raw, 'Invalid params: "_meta.progressToken" must be a string or a number, not '
                           f"{json_kind(meta['progressToken'])}", readable_id, INVALID_PARAMS)
    return Message(
        kind=REQUEST if has_id else NOTIFICATION,
        raw=raw,
        id=raw["id"] if has_id else None,
        method=method,
        params=params,
        meta=meta if isinstance(meta, dict) else {},
    )


def is_progress_token(value: Any) -> bool:
    """Whether a value is a progress token as the schema has it: a string or a number (never true or false)."""
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def fits_64_bits(value: int) -> bool:
    """Whether an integer is one orjson reads and writes exactly (signed or unsigned 64 bits)."""
    return INT64_MIN <= value <= UINT64_MAX


def needs_exact_reading(data: bytes, items: list[Any]) -> bool:
    """Whether the bytes may repeat an envelope key or hold a long integer; byte counts only, so it stays cheap."""
    # An escaped character (a key name may hide behind one) or a number long enough to overflow.
    if b"\\u" in data or LONG_NUMBER in data.translate(DIGITS_AS_ZERO):
        return True
    # Each envelope key orjson kept shows at least once in the bytes: more showings may be a repeat.
    kept = sum(len(ENVELOPE_KEY_SET.intersection(item)) for item in items if isinstance(item, dict))
    return sum(map(data.count, QUOTED_ENVELOPE_KEYS)) > kept


def oversized_integer_at(value: Any) -> str | None:
    """The JSON pointer of the first integer past 64 bits inside value, or None."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and not fits_64_bits(item):
            return where or "/"
        if isinstance(item, dict):
            stack.extend((child, f"{where}/{key}") for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, f"{where}/{index}") for index, child in enumerate(item))
    return None


def check_exact(raw: Any, exact: Any) -> Message | None:
    """Refuse a message whose exact reading repeats an envelope key or holds an integer past 64 bits."""
    if not isinstance(exact, dict):
        return None
    repeated = [key for key in ENVELOPE_KEYS if key in getattr(exact, "repeated", ())]
    request_id = exact.get("id")
    id_fits = not isinstance(request_id, int) or fits_64_bits(request_id)
    readable_id = request_id if "id" not in repeated and id_fits and is_valid_id(request_id) else None
    if repeated:
        return invalid(raw, f'Invalid Request: the message repeats "{repeated[0]}"; send each member once',
                       readable_id)
    if not id_fits:
        return invalid(raw, 'Invalid Request: "id" must be a string or an integer within 64 bits')
    where = oversized_integer_at(exact.get("params"))
    if where is not None:
        return invalid(raw, f"Invalid params: the integer at params{where} does not fit in 64 bits; "
                            "send it as a string", readable_id, INVALID_PARAMS)
    if oversized_integer_at([exact.get("result"), exact.get("error")]) is not None:
        return invalid(raw, "Invalid Request: the response holds an integer that does not fit in 64 bits",
                       readable_id)
    return None


def read_exactly(data: bytes) -> Any:
    """Decode a body with loads_exact; ParseFailure (-32600) when only orjson could read it."""
    try:
        return loads_exact(data)
    except (ValueError, RecursionError):
        raise ParseFailure(error_response(
            None, INVALID_REQUEST, "Invalid Request: the body holds numbers or nesting this server cannot read")
        ) from None


def classify_exactly(raw: Any, exact: Any) -> Message:
    """Classify one message, unless its exact reading refuses it."""
    refused = check_exact(raw, exact)
    return refused if refused is not None else classify(raw)


# Where orjson says it stopped reading: "... line 1 column 7 (char 6)".
POSITION = re.compile(r"line (\d+) column (\d+)")


def parse_failure(problem: ValueError) -> ParseFailure:
    """The -32700 refusal of a body orjson could not read, naming what it cannot hold (a huge number, deep nesting)."""
    reason = str(problem)
    if reason.startswith("number is infinity"):  # orjson's words for 1e400 or a 400-digit integer
        return ParseFailure(error_response(
            None, PARSE_ERROR,
            "Parse error: a number in the body is too large to read (past a double's range); send such numbers as "
            "strings"))
    if reason.startswith("depth limit exceeded"):
        # orjson's own limit, met before the end of the body is: the body may be unfinished too, so still -32700.
        return ParseFailure(error_response(
            None, PARSE_ERROR,
            f"Parse error: JSON nested deeper than {ORJSON_MAX_DEPTH} levels, which this server does not read "
            "(MCP_MAX_JSON_DEPTH refuses less); send flatter JSON"))
    found = POSITION.search(reason)
    where = f" (line {found[1]}, column {found[2]})" if found else ""
    if reason.startswith("str is not valid UTF-8"):
        return ParseFailure(error_response(None, PARSE_ERROR,
                                           "Parse error: the body is not JSON: it is not UTF-8 text"))
    if "surrogate in string" in reason:
        return ParseFailure(error_response(
            None, PARSE_ERROR,
            f"Parse error: a \\u escape in D800-DFFF without its pair (a lone surrogate){where} is no text; send "
            "a character past U+FFFF as a surrogate pair or as UTF-8"))
    return ParseFailure(error_response(None, PARSE_ERROR, f"Parse error: the body is not valid JSON{where}"))


def parse_body(data: bytes) -> Body:
    """Decode and classify a POST body; raises ParseFailure when it is not JSON."""
    try:
        decoded = loads(data)
    except ValueError as problem:
        raise parse_failure(problem) from None
    is_batch = isinstance(decoded, list)
    if is_batch and not decoded:
        return Body([invalid(decoded, "Invalid Request: an empty batch")], is_batch=False)
    items = decoded if is_batch else [decoded]
    if needs_exact_reading(data, items):
        exact = read_exactly(data)
        exact_items = exact if isinstance(exact, list) else [exact]
        messages = [classify_exactly(raw, item) for raw, item in zip(items, exact_items, strict=True)]
        return Body(messages, is_batch=is_batch)
    return Body([classify(item) for item in items], is_batch=is_batch)

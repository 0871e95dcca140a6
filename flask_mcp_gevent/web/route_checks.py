"""What a route tool refuses to send: URL variables that would change the path's meaning or are not the
converter's type, query values that are not scalars, and a built URL that reaches anything but the exposed route.

Each refusal is a ToolError (an isError result) naming the argument or the URL; nothing is sent to the app.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any
from urllib.parse import unquote

from flask import Flask
from werkzeug.exceptions import HTTPException
from werkzeug.routing import (
    AnyConverter,
    BaseConverter,
    FloatConverter,
    IntegerConverter,
    PathConverter,
    RequestRedirect,
    Rule,
    UnicodeConverter,
    UUIDConverter,
    ValidationError,
)
from werkzeug.routing.converters import NumberConverter

from flask_mcp_gevent.toolkit.context import ToolError

__all__ = ["check_query", "check_resolves", "check_variables", "query_pairs"]

# '/', '\' or '.' written as a percent escape: a server or middleware that decodes once more would see a separator.
ENCODED_SEPARATOR = re.compile(r"%(2f|5c|2e)", re.IGNORECASE)
DOT_SEGMENTS = frozenset({".", ".."})
# How many rounds of percent-decoding a value is checked through; one still changing after them is refused.
MAX_DECODINGS = 4
# Werkzeug's converters, whose to_python is a pure function of the text: the arguments a URL matches are compared
# with the ones given for these only (a host's own converter may load a model, a new object at each call).
PURE_CONVERTERS = frozenset({UnicodeConverter, PathConverter, AnyConverter, UUIDConverter, IntegerConverter,
                             FloatConverter})


def invalid(tool_name: str, where: str, problem: str) -> ToolError:
    """The refusal of one argument, in the words tools/call uses for a schema violation."""
    return ToolError(f"Invalid arguments for tool '{tool_name}': /{where}: {problem}; nothing was sent to the app")


def check_variables(tool_name: str, rule: Rule, variables: dict[str, Any]) -> None:
    """Refuse a URL variable its converter would not carry as one value of the exposed route."""
    for name, value in variables.items():
        problem = variable_problem(rule._converters[name], value)
        if problem is not None:
            raise invalid(tool_name, name, f"{value!r} {problem} (the URL variable <{name}> of {rule.rule})")


def variable_problem(converter: BaseConverter, value: Any) -> str | None:
    """What is wrong with value for one URL variable, or None."""
    if isinstance(converter, IntegerConverter):
        return integer_problem(converter, value)
    if isinstance(converter, FloatConverter):
        return number_problem(converter, value)
    if type(value) is not str:
        return "is not a string"
    return path_problem(value, isinstance(converter, PathConverter))


def integer_problem(converter: IntegerConverter, value: Any) -> str | None:
    """Only a JSON integer (not 1.0, 1e300, true or "1") within the converter's range."""
    if type(value) is not int:
        return "is not an integer"
    return range_problem(converter, value)


def number_problem(converter: FloatConverter, value: Any) -> str | None:
    """A finite number whose text the converter matches (werkzeug's floats are digits '.' digits, no exponent)."""
    if type(value) is not int and type(value) is not float:
        return "is not a number"
    if not math.isfinite(value):
        return "is not a finite number"
    problem = range_problem(converter, value)
    if problem is None and not re.fullmatch(converter.regex, str(float(value))):
        return (f"is written {float(value)} in a URL, which its float converter does not take (digits, a point, "
                "digits, no exponent): give 0 or a number of size from 0.0001 up to 1e16")
    return problem


def range_problem(converter: NumberConverter, value: float) -> str | None:
    """Outside the converter's signedness, min or max, or None."""
    if value < 0 and not converter.signed:
        return "is negative"
    if converter.min is not None and value < converter.min:
        return f"is less than {converter.min}"
    if converter.max is not None and value > converter.max:
        return f"is more than {converter.max}"
    return None


def path_problem(value: str, slashes_allowed: bool) -> str | None:
    """What in a string variable would change the path's meaning, as sent or once (or more) percent-decoded."""
    text = value
    for round_ in range(MAX_DECODINGS + 1):
        problem = segments_problem(text, slashes_allowed)
        if problem is not None:
            return problem if round_ == 0 else f"{problem} once percent-decoded"
        decoded = unquote(text)
        if decoded == text:
            return None
        text = decoded
    return f"is still percent-encoded after {MAX_DECODINGS} decodings"


def segments_problem(text: str, slashes_allowed: bool) -> str | None:
    """A control character, a backslash, an encoded separator, or a '/', '', '.' or '..' segment, or None."""
    if any(unicodedata.category(char) == "Cc" for char in text):
        return "has a control character"
    if "\\" in text:
        return "has a backslash"
    if ENCODED_SEPARATOR.search(text):
        return "has a percent-encoded '/', '\\' or '.'"
    if "/" in text and not slashes_allowed:
        return "has a '/', which a one-segment variable cannot carry"
    for segment in text.split("/"):
        if not segment:
            return "has an empty path segment"
        if segment in DOT_SEGMENTS:
            return f"has a {segment!r} path segment"
    return None


def check_query(tool_name: str, query: Any) -> None:
    """Refuse query values other than strings, finite numbers, booleans, null, or lists of those."""
    if not isinstance(query, dict):
        raise invalid(tool_name, "query", "is not an object")
    for key, value in query.items():
        for item in value if isinstance(value, list) else [value]:
            if item is not None and not is_query_scalar(item):
                raise invalid(tool_name, f"query/{key}", f"{item!r} is not a string, finite number or boolean "
                                                         "(or a list of those, for a repeated parameter)")


def is_query_scalar(value: Any) -> bool:
    """True for what a query parameter can carry as text."""
    if type(value) is float:
        return math.isfinite(value)
    return type(value) in (str, int, bool)


def query_pairs(query: dict[str, Any]) -> list[tuple[str, str]]:
    """The query's (name, text) pairs: a list repeats its name, null leaves it out, booleans are spelled as in JSON."""
    pairs = []
    for key, value in query.items():
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                pairs.append((key, ("true" if item else "false") if type(item) is bool else str(item)))
    return pairs


def check_resolves(app: Flask, environ: dict[str, Any], rule: Rule, method: str, variables: dict[str, Any],
                   tool_name: str) -> None:
    """Refuse a request the app would not route to rule's endpoint and method with these variables.

    Call it in the internal request's app context, where Flask matches a request's URL: a converter may need it.
    """
    request = app.request_class(environ)
    target = f"{method} {request.path}"
    try:
        adapter = app.create_url_adapter(request)
        assert adapter is not None  # never None for a request
        matched, values = adapter.match(method=method, return_rule=True)
    except RequestRedirect:
        raise ToolError(f"Tool '{tool_name}' refused {target}: the app would redirect it elsewhere; nothing was "
                        "sent to the app") from None
    except HTTPException as refusal:
        raise ToolError(f"Tool '{tool_name}' refused {target}: it does not reach the route this tool exposes "
                        f"({rule.rule}; the app would answer {refusal.code}); nothing was sent to the app") from None
    if matched.endpoint != rule.endpoint:
        # The other route stays unnamed: its endpoint is none of the caller's business.
        raise ToolError(f"Tool '{tool_name}' refused {target}: it reaches another route of the app, not the one "
                        f"this tool exposes ({rule.rule}); nothing was sent to the app")
    if any(values[name] != expected_value(rule, name, value, tool_name) for name, value in variables.items()
           if type(rule._converters[name]) in PURE_CONVERTERS):
        raise ToolError(f"Tool '{tool_name}' refused {target}: it reaches {rule.rule} with other URL variables than "
                        "the ones given; nothing was sent to the app")


def expected_value(rule: Rule, name: str, value: Any, tool_name: str) -> Any:
    """The view argument the app should match for one variable: converted as its converter would."""
    converter = rule._converters[name]
    try:
        return value if isinstance(converter, NumberConverter) else converter.to_python(value)
    except ValidationError:
        raise invalid(tool_name, name, f"{value!r} is not a value the URL variable <{name}> takes") from None

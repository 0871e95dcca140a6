"""The console's pure JavaScript functions, run in the browser: the validator, the metrics parser, the curl quoting.

Each is imported as the page imports it (an ES module from /console/), so what is tested is what is served.
"""

from __future__ import annotations

import json
import subprocess

import pytest

pytestmark = pytest.mark.e2e

CALL_MODULE = """
const [module, name, args, done] = arguments;
import(module).then((m) => done(JSON.stringify(m[name](...args))), (err) => done(JSON.stringify({error: String(err)})));
"""
PROMETHEUS_TEXT = """# HELP mcp_requests_total JSON-RPC requests answered.
# TYPE mcp_requests_total counter
mcp_requests_total{code="",method="tools/call",outcome="ok"} 7.0
mcp_requests_total{code="-32601",method="other",outcome="error"} 2.0
mcp_open_streams{kind="request"} 1.0
mcp_sessions 3.0
mcp_tool_call_duration_seconds_bucket{le="0.001"} 6.0
mcp_tool_call_duration_seconds_bucket{le="+Inf"} 7.0
"""


@pytest.fixture
def call_js(page):
    """Call an exported function of a console module in the page; returns its JSON result."""
    def call(module: str, name: str, *args):
        page.driver.set_script_timeout(20)
        return json.loads(page.driver.execute_async_script(CALL_MODULE, f"/console/{module}", name, list(args)))
    return call


SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 9},
        "s": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
        "e": {"enum": ["x", "y"]},
        "list": {"type": "array", "items": {"type": "number"}, "maxItems": 2},
        "o": {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]},
    },
    "required": ["n"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("value, expected", [
    ({"n": 5}, []),
    ({}, [{"path": "n", "message": "is required"}]),
    ({"n": 1.5}, [{"path": "n", "message": "must be an integer"}]),
    ({"n": 10}, [{"path": "n", "message": "must be at most 9"}]),
    ({"n": 1, "s": "A"}, [{"path": "s", "message": "must be at least 2 characters"},
                          {"path": "s", "message": "must match ^[a-z]+$"}]),
    ({"n": 1, "e": "z"}, [{"path": "e", "message": 'must be one of "x", "y"'}]),
    ({"n": 1, "list": [1, "2", 3]}, [{"path": "list", "message": "takes at most 2 items"},
                                     {"path": "list[1]", "message": "must be a number"}]),
    ({"n": 1, "o": {}}, [{"path": "o.b", "message": "is required"}]),
    ({"n": 1, "extra": 0}, [{"path": "(arguments)", "message": 'has no property "extra"'}]),
])
def test_the_validator_reports_what_the_schema_refuses(call_js, value, expected):
    assert call_js("schema_validate.js", "validate", SCHEMA, value) == expected


def test_the_metrics_parser_reads_prometheus_text(call_js):
    samples = call_js("ops.js", "parsePrometheus", PROMETHEUS_TEXT)
    assert samples[0] == {"name": "mcp_requests_total", "value": 7,
                          "labels": {"code": "", "method": "tools/call", "outcome": "ok"}}
    assert {s["name"] for s in samples} == {"mcp_requests_total", "mcp_open_streams", "mcp_sessions",
                                            "mcp_tool_call_duration_seconds_bucket"}


def test_two_scrapes_give_sessions_streams_and_rates(call_js):
    before = call_js("ops.js", "parsePrometheus", PROMETHEUS_TEXT)
    after = call_js("ops.js", "parsePrometheus", PROMETHEUS_TEXT.replace(" 7.0", " 11.0"))  # four more calls
    summary = call_js("ops.js", "summarize", before, after, 2)
    assert summary["sessions"] == 3 and summary["streams"] == {"request": 1}
    assert summary["callRate"] == 2.0  # (11 - 7) calls over 2 seconds
    assert summary["requestRate"] == 2.0


@pytest.mark.parametrize("text", ["plain", "it's", "a'b'c", "$HOME `id` \\n"])
def test_shell_quoting_survives_a_real_shell(call_js, text):
    quoted = call_js("curl.js", "shellQuote", text)
    assert subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True, text=True,
                          check=True, timeout=10).stdout == text

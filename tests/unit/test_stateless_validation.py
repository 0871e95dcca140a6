"""stateless.validation: the pre-dispatch ladder of 2026-07-28, first failure wins, each with its code and status."""

from __future__ import annotations

import copy

import pytest

from flask_mcp_gevent.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from flask_mcp_gevent.stateless.validation import (
    HeaderParam,
    InvalidHeaderAnnotation,
    check_param_headers,
    header_params,
    http_status,
    missing_capability,
    validate_request,
)

PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"


def call(method="tools/call", request_id=7, version="2026-07-28", **params):
    """A well-formed stateless request and the headers a conforming client sends with it."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {"_meta": {PV: version, CAPS: {}}, **params}}
    sent = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    if "name" in params:
        sent["Mcp-Name"] = params["name"]
    if "uri" in params:
        sent["Mcp-Name"] = params["uri"]
    return body, sent


def rejected(body, sent=None, **kwargs):
    """Validate and return (code, http status, id) of the rejection."""
    found = validate_request(body, sent, **kwargs)
    assert found is not None
    assert found.response()["error"]["code"] == found.code
    return found.code, found.http_status, found.request_id


def test_a_well_formed_request_passes_over_http_and_stdio():
    body, sent = call(name="echo", arguments={"text": "hi"})
    assert validate_request(body, sent) is None
    assert validate_request(body, None) is None
    assert validate_request(*call("resources/read", uri="test://static-text")) is None
    assert validate_request(*call("server/discover")) is None


@pytest.mark.parametrize("mangle", [
    lambda b: b.pop("params"),
    lambda b: b.__setitem__("params", []),
    lambda b: b["params"].pop("_meta"),
    lambda b: b["params"].__setitem__("_meta", "x"),
    lambda b: b["params"]["_meta"].pop(PV),
    lambda b: b["params"]["_meta"].pop(CAPS),
    lambda b: b["params"]["_meta"].__setitem__(PV, 20260728),
    lambda b: b["params"]["_meta"].__setitem__(CAPS, []),
    lambda b: b["params"]["_meta"].__setitem__("io.modelcontextprotocol/clientInfo", "me"),
    lambda b: b["params"]["_meta"].__setitem__("io.modelcontextprotocol/logLevel", 5),
    lambda b: b["params"]["_meta"].__setitem__("io.modelcontextprotocol/logLevel", None),
])
def test_missing_or_malformed_meta_is_invalid_params_400_with_the_id(mangle):
    body, sent = call("tools/list", request_id="abc")
    mangle(body)
    assert rejected(body, sent) == (INVALID_PARAMS, 400, "abc")


def test_client_info_is_optional():
    body, sent = call("tools/list")
    assert "io.modelcontextprotocol/clientInfo" not in body["params"]["_meta"]
    assert validate_request(body, sent) is None


def test_meta_is_checked_before_headers():
    body, _ = call("tools/list")
    del body["params"]["_meta"][CAPS]
    assert rejected(body, {})[0] == INVALID_PARAMS


@pytest.mark.parametrize(("header", "value"), [
    ("MCP-Protocol-Version", None), ("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Method", None),
    ("Mcp-Method", "tools/list"), ("Mcp-Method", "TOOLS/CALL"), ("Mcp-Name", None), ("Mcp-Name", "other"),
    ("Mcp-Name", "ech\u00f6"), ("Mcp-Name", "=?base64?ZWNobw?="), ("Mcp-Method", "=?base64?dG9vbHMvY2FsbA==?="),
])
def test_missing_invalid_or_mismatched_standard_headers_are_header_mismatch_400(header, value):
    body, sent = call(name="echo", request_id=0)
    sent.pop(header)
    if value is not None:
        sent[header.lower()] = value
    assert rejected(body, sent) == (HEADER_MISMATCH, 400, 0)


def test_mcp_name_may_be_base64_and_surrounded_by_whitespace():
    body, sent = call("prompts/get", name="söme prompt")
    sent["Mcp-Name"] = "=?base64?c8O2bWUgcHJvbXB0?="
    assert validate_request(body, sent) is None
    body, sent = call(name="echo")
    sent["Mcp-Name"] = "  echo  "
    assert validate_request(body, sent) is None


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_tasks_methods_carry_their_task_id_in_mcp_name(method):
    body, sent = call(method, taskId="t-1")
    assert rejected(body, sent) == (HEADER_MISMATCH, 400, 7)
    assert validate_request(body, {**sent, "Mcp-Name": "t-1"}) is None
    assert rejected(body, {**sent, "Mcp-Name": "t-2"}) == (HEADER_MISMATCH, 400, 7)


def test_mcp_name_is_not_expected_when_the_body_has_no_name():
    body, sent = call()
    assert "Mcp-Name" not in sent
    assert validate_request(body, sent) is None


def test_headers_come_before_the_version_check():
    body, sent = call("tools/list", version="v999.0.0")
    sent["MCP-Protocol-Version"] = "2026-07-28"
    assert rejected(body, sent)[0] == HEADER_MISMATCH


def test_an_unsupported_version_is_32022_with_supported_and_requested():
    body, sent = call("tools/list", version="v999.0.0", request_id=3)
    found = validate_request(body, sent)
    assert (found.code, found.http_status, found.request_id) == (UNSUPPORTED_PROTOCOL_VERSION, 400, 3)
    assert found.response()["error"]["data"] == {
        "supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"], "requested": "v999.0.0"}


@pytest.mark.parametrize("method", [
    "initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "unknown/method",
    "tasks/list", "notifications/initialized",
])
def test_unknown_and_removed_methods_are_32601_404(method):
    assert rejected(*call(method, request_id=9)) == (METHOD_NOT_FOUND, 404, 9)


def test_the_removed_method_message_says_what_replaced_it():
    found = validate_request(*call("logging/setLevel"))
    assert "io.modelcontextprotocol/logLevel" in found.message


def test_the_caller_chooses_the_methods_it_serves():
    assert rejected(*call("completion/complete"), methods=frozenset({"tools/list"}))[0] == METHOD_NOT_FOUND


@pytest.mark.parametrize("body", ["x", [], {"id": 1}, {"id": 1, "method": 5}])
def test_a_body_that_is_not_a_request_is_invalid_request(body):
    assert rejected(body, {})[:2] == (INVALID_REQUEST, 400)


def test_an_invalid_id_is_answered_with_a_null_id():
    body, sent = call("ping", request_id=True)
    assert rejected(body, sent)[2] is None


def test_missing_capability_names_the_capabilities_as_an_object():
    found = missing_capability({"id": 4}, {"sampling": {}})
    assert (found.code, found.http_status, found.request_id) == (MISSING_REQUIRED_CLIENT_CAPABILITY, 400, 4)
    assert found.response()["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_http_statuses_follow_the_spec_table():
    assert [http_status(c) for c in (-32602, -32020, -32021, -32022, -32601, -32603)] == [400, 400, 400, 400, 404, 200]


SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": ["boolean", "null"], "x-mcp-header": "Verbose"},
        "nested": {"type": "object", "properties": {"tenant": {"type": "string", "x-mcp-header": "Tenant"}}},
        "x-mcp-header": {"type": "string"},
        "query": {"type": "string", "default": {"x-mcp-header": "NotAnAnnotation"}},
    },
}


def test_header_params_finds_annotations_on_properties_chains():
    assert header_params(SCHEMA) == (
        HeaderParam("Region", ("region",), "string"), HeaderParam("Priority", ("priority",), "integer"),
        HeaderParam("Verbose", ("verbose",), "boolean"), HeaderParam("Tenant", ("nested", "tenant"), "string"))
    assert header_params({"type": "object"}) == ()


@pytest.mark.parametrize("bad", [
    {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
    {"properties": {"a": {"x-mcp-header": "A"}}},
    {"properties": {"a": {"type": "object", "x-mcp-header": "A"}}},
    {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
    {"properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}},
    {"properties": {"a": {"type": "string", "x-mcp-header": "A\r\n"}}},
    {"properties": {"a": {"type": "string", "x-mcp-header": "Dup"}, "b": {"type": "string", "x-mcp-header": "dup"}}},
    {"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}},
    {"properties": {"a": {"oneOf": [{"type": "string", "x-mcp-header": "A"}]}}},
    {"$defs": {"a": {"type": "string", "x-mcp-header": "A"}}, "properties": {"a": {"$ref": "#/$defs/a"}}},
    {"type": "object", "x-mcp-header": "Root"},
])
def test_header_params_refuses_annotations_that_break_the_rules(bad):
    with pytest.raises(InvalidHeaderAnnotation):
        header_params(bad)


ARGS = {"region": "us-west1", "priority": 42, "verbose": False, "nested": {"tenant": "Hello, 世界"}}
GOOD = {"Mcp-Param-Region": "us-west1", "Mcp-Param-Priority": "42", "Mcp-Param-Verbose": "false",
        "Mcp-Param-Tenant": "=?base64?SGVsbG8sIOS4lueVjA==?="}


def param_check(arguments, sent):
    """Run check_param_headers for a tools/call of SCHEMA's tool; the code or None."""
    body, _ = call(name="t", arguments=arguments)
    found = check_param_headers(body, sent, header_params(SCHEMA))
    return None if found is None else (found.code, found.http_status, found.request_id)


def test_matching_param_headers_pass():
    assert param_check(ARGS, GOOD) is None
    assert param_check(ARGS, {k.lower(): v for k, v in GOOD.items()}) is None
    assert param_check({**ARGS, "priority": 42.0}, {**GOOD, "Mcp-Param-Priority": "42.0"}) is None
    assert param_check({**ARGS, "priority": 42}, {**GOOD, "Mcp-Param-Priority": "42.0"}) is None


def test_absent_or_null_values_expect_no_header():
    sent = {"Mcp-Param-Region": "us-west1"}
    assert param_check({"region": "us-west1", "verbose": None}, sent) is None


@pytest.mark.parametrize(("header", "value"), [
    ("Mcp-Param-Region", None), ("Mcp-Param-Region", "us-east1"), ("Mcp-Param-Priority", "43"),
    ("Mcp-Param-Priority", "forty-two"), ("Mcp-Param-Verbose", "False"), ("Mcp-Param-Tenant", "Hello"),
    ("Mcp-Param-Tenant", "=?base64?SGVs!!!bG8=?="), ("Mcp-Param-Tenant", "=?base64?SGVsbG8?="),
    ("Mcp-Param-Region", "us-west1\x00"),
])
def test_missing_invalid_or_mismatched_param_headers_are_header_mismatch(header, value):
    sent = copy.deepcopy(GOOD)
    sent.pop(header)
    if value is not None:
        sent[header] = value
    assert param_check(ARGS, sent) == (HEADER_MISMATCH, 400, 7)


def test_a_param_header_without_its_value_in_the_body_is_refused():
    assert param_check({"region": "us-west1"}, {"Mcp-Param-Region": "us-west1", "Mcp-Param-Priority": "1"})[0] == (
        HEADER_MISMATCH)


def test_unannotated_param_headers_are_ignored():
    assert param_check(ARGS, {**GOOD, "Mcp-Param-Other": "whatever"}) is None

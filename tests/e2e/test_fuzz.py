"""Property-based fuzzing: malformed and hostile JSON-RPC thrown at every endpoint of a real gunicorn.

For every generated request the server must answer below 500, with a body that
carries no traceback, no file path and no version; afterwards it must still serve a
valid call, and a victim session's stream, opened before the fuzzing, must have
received nothing. The number of examples is bounded so that CI stays fast.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flask_mcp_gevent.auth.api_keys import hash_key, new_key
from tests.e2e.raw_clients import BOTH, LegacyStream, StreamableSession, call_tool, request
from tests.e2e.server_process import ROOT, ServerProcess, free_port
from tests.oauth_issuer import ISSUER, TestIssuer

pytestmark = pytest.mark.e2e

MAX_EXAMPLES = 200
VERSION = "2025-03-26"  # batches are part of this version, so they reach the app's MCP server
FUZZER_KEY = new_key()
VICTIM_KEY = new_key()
# What must never reach a client: server file paths, tracebacks, interpreter and library details.
LEAKS = ("Traceback", 'File "', str(ROOT), "site-packages", sys.prefix, "gunicorn/", "Werkzeug/", "Python/3",
         "jsonrpcserver", "orjson", "gevent.")
METHODS = ["initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read",
           "resources/templates/list", "resources/subscribe", "resources/unsubscribe", "prompts/list",
           "prompts/get", "logging/setLevel", "completion/complete", "notifications/initialized",
           "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed",
           "rpc.discover", "server/discover", "__init__", "tools/call/../../admin", ""]
PRINTABLE_ASCII = st.characters(min_codepoint=0x21, max_codepoint=0x7E)
# A whole answer must arrive within this; a response that keeps streaming is a failure, not a hang.
ANSWER_DEADLINE_S = 10.0
TOOL_NAMES = ["add", "echo", "get_time", "", "../echo", "echo\u0000", "a" * 300]


@dataclass
class StreamRecorder:
    """Reads an SSE stream on a thread and keeps every event (keepalive comments are skipped)."""

    stream: LegacyStream
    events: list = field(default_factory=list)
    thread: threading.Thread | None = None

    def start(self) -> StreamRecorder:
        """Start reading in the background."""
        self.thread = threading.Thread(target=self.read, daemon=True)
        self.thread.start()
        return self

    def read(self) -> None:
        """Collect events until the stream ends or is closed."""
        try:
            # The stream's own event iterator: it has already consumed the endpoint and initialize events.
            for event in self.stream.events:
                self.events.append(event)
        except (httpx.HTTPError, ValueError, RuntimeError):
            pass  # closed by the test at the end


@dataclass
class Target:
    """The server and the sessions the fuzzer aims at."""

    server: ServerProcess
    issuer: TestIssuer
    http: httpx.Client
    streamable_id: str
    legacy_id: str
    victim: LegacyStream
    victim_recorder: StreamRecorder
    attacker_recorder: StreamRecorder


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """A secured server, a victim's legacy stream, and the fuzzer's own sessions of both transports."""
    directory = tmp_path_factory.mktemp("fuzz")
    keys_file = directory / "keys.json"
    keys_file.write_text(json.dumps({hash_key(FUZZER_KEY): {"principal": "fuzzer", "tools": ["*"],
                                                            "resources": ["*"], "prompts": ["*"]},
                                     hash_key(VICTIM_KEY): {"principal": "victim", "tools": ["*"]}}))
    port = free_port()
    issuer = TestIssuer(audience=f"http://127.0.0.1:{port}/mcp")
    env = {"MCP_API_KEYS_FILE": str(keys_file), "MCP_OAUTH_JWKS_URL": str(issuer.write_jwks(directory / "jwks.json")),
           "MCP_OAUTH_ISSUER": ISSUER, "MCP_OAUTH_AUDIENCE": issuer.audience,
           "MCP_MAX_BODY_BYTES": "262144", "MCP_MAX_SESSIONS_PER_PRINCIPAL": "5000",
           "MCP_CLIENT_REQUEST_TIMEOUT_S": "2", "MCP_KEEPALIVE_S": "1"}
    with ServerProcess(env=env, port=port) as server:
        timeout = httpx.Timeout(10.0, connect=5.0)
        with httpx.Client(headers={"Authorization": f"Bearer {FUZZER_KEY}"}, timeout=timeout) as http, \
                httpx.Client(headers={"Authorization": f"Bearer {VICTIM_KEY}"}, timeout=timeout) as victim_http:
            victim = LegacyStream(victim_http, server.base_url)
            victim.open()
            attacker = LegacyStream(http, server.base_url)
            attacker.open()
            streamable = StreamableSession(http, server.url, VERSION)
            yield Target(server, issuer, http, streamable.session_id, attacker.session_id, victim,
                         StreamRecorder(victim).start(), StreamRecorder(attacker).start())
            attacker.close()
            victim.close()


# strategies
json_scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=12)
ids = st.one_of(st.integers(min_value=-(2**63), max_value=2**63), st.text(max_size=12), st.none(), st.booleans(),
                st.floats(allow_nan=False, allow_infinity=False), st.lists(st.integers(), max_size=2))
tool_params = st.fixed_dictionaries({"name": st.one_of(st.sampled_from(TOOL_NAMES), json_values)},
                                    optional={"arguments": json_values, "_meta": json_values})
params = st.one_of(json_values, tool_params,
                   st.fixed_dictionaries({}, optional={"uri": st.text(max_size=60), "name": st.text(max_size=20),
                                                       "cursor": json_values, "level": st.text(max_size=10),
                                                       "requestId": ids, "protocolVersion": json_values,
                                                       "ref": json_values, "argument": json_values}))


@st.composite
def chaotic_messages(draw) -> Any:
    """A JSON-RPC-shaped object with any of its fields missing, mistyped or hostile."""
    message: dict[str, Any] = {}
    if draw(st.booleans()):
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "1.0", 2.0, None, ""]))
    if draw(st.integers(0, 4)):
        message["method"] = draw(st.one_of(st.sampled_from(METHODS), st.text(max_size=30), json_scalars))
    if draw(st.booleans()):
        message["id"] = draw(ids)
    if draw(st.booleans()):
        message["params"] = draw(params)
    if draw(st.integers(0, 5)) == 0:
        message[draw(st.sampled_from(["result", "error"]))] = draw(json_values)
    return message


# A valid envelope around hostile params: these reach the handlers, where most of the code is.
well_formed_messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "method": st.sampled_from(METHODS), "params": params},
    optional={"id": st.one_of(st.integers(min_value=-(2**53), max_value=2**53), st.text(max_size=12))},
)
messages = st.one_of(well_formed_messages, well_formed_messages, chaotic_messages())


def truncate(text: bytes, cut: int) -> bytes:
    """Cut a body short, as a broken client would."""
    return text[: max(0, len(text) - cut)]


bodies = st.one_of(
    messages.map(lambda m: json.dumps(m).encode()),
    st.lists(messages, max_size=6).map(lambda ms: json.dumps(ms).encode()),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.tuples(messages, st.integers(1, 20)).map(lambda pair: truncate(json.dumps(pair[0]).encode(), pair[1])),
    st.integers(1, 3000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.integers(1, 3000).map(lambda depth: b'{"a":' * depth + b"1" + b"}" * depth),
    st.binary(max_size=200),
    st.just(b""),
    st.just(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\\ud800"}}'),  # lone surrogate
)


@dataclass
class Case:
    """One hostile request: where it goes, what it carries, and with which credentials."""

    verb: str
    route: str
    body: bytes
    content_type: str
    accept: str
    credential: str
    session_header: str | None = None
    version_header: str | None = None


@st.composite
def cases(draw) -> Case:
    """Any endpoint, any body, mostly with valid credentials so that the body reaches the app's MCP server."""
    # Weighted towards the fuzzer's live sessions, where bodies reach the app's MCP server.
    route = draw(st.sampled_from(["streamable-session"] * 5 + ["legacy-mcp"] * 3 + ["streamable-new"] * 2 + [
        "legacy-messages", "legacy-unknown", "victim-session", "garbage-session", "get-garbage", "delete-garbage",
        "sse-post"]))
    verb = {"get-garbage": "GET", "delete-garbage": "DELETE"}.get(route, "POST")
    return Case(
        verb=verb, route=route, body=draw(bodies),
        content_type=draw(st.sampled_from(["application/json"] * 6 + ["application/json; charset=latin-1",
                                                                         "text/plain", "application/x+json", ""])),
        accept=draw(st.sampled_from([BOTH, BOTH, "application/json", "text/event-stream", "*/*", "text/html", ""])),
        credential=draw(st.sampled_from(["fuzzer"] * 8 + ["none", "garbage", "expired-jwt", "jwt-no-scope",
                                                           "unicode"])),
        session_header=draw(st.one_of(st.none(), st.text(PRINTABLE_ASCII, max_size=40),
                                      st.sampled_from(["0" * 32, "g" * 32]))),
        version_header=draw(st.one_of(st.none(), st.sampled_from([VERSION, "2024-11-05", "1999-01-01", ""]))),
    )


def send(target: Target, case: Case) -> httpx.Response:
    """Turn a case into one HTTP request against the target."""
    credentials = {
        "fuzzer": f"Bearer {FUZZER_KEY}", "none": None, "garbage": "Bearer not-a-key", "unicode": "Bearer k\u00e9y",
        "expired-jwt": f"Bearer {target.issuer.token(lifetime_s=-600)}",
        "jwt-no-scope": f"Bearer {target.issuer.token(scopes='')}",
    }
    headers: dict[str, str] = {}
    if credentials[case.credential] is not None:
        headers["Authorization"] = credentials[case.credential]
    if case.content_type:
        headers["Content-Type"] = case.content_type
    if case.accept:
        headers["Accept"] = case.accept
    if case.version_header is not None:
        headers["MCP-Protocol-Version"] = case.version_header
    base = target.server.base_url
    url, params = base + "/mcp", {}
    if case.route == "streamable-session":
        headers["Mcp-Session-Id"] = target.streamable_id
    elif case.route == "legacy-mcp":
        params["session_id"] = target.legacy_id
    elif case.route == "legacy-messages":
        url, params["session_id"] = base + "/messages", target.legacy_id
    elif case.route == "legacy-unknown":
        params["sessionId"] = case.session_header or ""
    elif case.route == "victim-session":
        params["session_id"] = target.victim.session_id  # the fuzzer's credentials on the victim's session
    elif case.route == "sse-post":
        url = base + "/sse"
    elif case.route in ("garbage-session", "get-garbage", "delete-garbage"):
        headers["Mcp-Session-Id"] = case.session_header or "x"
    # Header values httpx cannot encode are a client-side impossibility, not a server answer.
    headers = {k: v for k, v in headers.items() if v.isascii() and v.isprintable()}
    deadline = time.monotonic() + ANSWER_DEADLINE_S
    with httpx.Client(timeout=httpx.Timeout(ANSWER_DEADLINE_S, connect=5.0)) as http, http.stream(
            case.verb, url, params=params, content=case.body if case.verb == "POST" else None,
            headers=headers) as response:
        chunks = []
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            assert time.monotonic() < deadline, f"{case} got an answer that never ends"
        response._content = b"".join(chunks)
        return response


def assert_nothing_leaks(text: str, where: str) -> None:
    """Fail if a body shows a traceback, a server path or a version string, or a handler crashed."""
    for leak in LEAKS:
        assert leak not in text, f"{where} leaks {leak!r}: {text[:500]}"
    # -32603 means a handler raised on this input: a bug even though the client learns nothing.
    assert '"code":-32603' not in text.replace(" ", ""), f"{where} crashed a handler: {text[:500]}"


@settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_hostile_requests_never_get_a_5xx_or_a_leak(target, case):
    response = send(target, case)
    assert response.status_code < 500, (case, response.status_code, response.text[:500])
    assert_nothing_leaks(response.text, f"{case.verb} {case.route} -> {response.status_code}")
    for value in response.headers.values():
        assert_nothing_leaks(value, "a response header")


def test_the_server_is_intact_after_the_fuzzing(target):
    # Runs after the property test (file order): a valid call still works on both transports.
    with httpx.Client(headers={"Authorization": f"Bearer {FUZZER_KEY}"}, timeout=15) as http:
        fresh = StreamableSession(http, target.server.url, VERSION)
        assert fresh.call(call_tool("echo", {"text": "still here"}))["result"]["isError"] is False
    answer_id = "victim-after-fuzz"
    assert target.victim.post(request("ping", request_id=answer_id)).status_code == 202
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not target.victim_recorder.events:
        time.sleep(0.05)
    # The victim's stream got its own answer and nothing else: no fuzzer message ever reached it.
    assert [event.json() for event in target.victim_recorder.events] == [
        {"jsonrpc": "2.0", "id": answer_id, "result": {}}]
    # What the fuzzer's own legacy stream received leaks nothing either.
    for event in target.attacker_recorder.events:
        assert_nothing_leaks(event.data, "an event on the fuzzer's stream")
    log = target.server.read_log()
    assert FUZZER_KEY not in log and VICTIM_KEY not in log

"""Authentication, permissions and session binding on a real gunicorn, with API keys and OAuth tokens.

One server trusts a keys file (alice: echo and get_*; bob: every tool) and a test
authorization server's JWKS file (tokens need the `mcp` scope; `tools:<glob>` scopes
grant tools). Each rule of the security issue has a test here.
"""

from __future__ import annotations

import json
import re

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from flask_mcp_gevent.auth.api_keys import hash_key, new_key
from flask_mcp_gevent.errors import PERMISSION_DENIED
from tests.e2e.raw_clients import BOTH, LegacyStream, StreamableSession, call_tool, initialize, request
from tests.e2e.server_process import ServerProcess, free_port
from tests.oauth_issuer import ISSUER, TestIssuer

pytestmark = pytest.mark.e2e

ALICE_KEY = new_key()
BOB_KEY = new_key()
KEYS = {
    hash_key(ALICE_KEY): {"principal": "alice", "tools": ["echo", "get_*"]},
    hash_key(BOB_KEY): {"principal": "bob", "tools": ["*"], "resources": ["config://*"], "prompts": ["code_*"]},
}
VERSION = "2025-06-18"


@pytest.fixture(scope="module")
def issuer():
    """The test authorization server."""
    return TestIssuer()


@pytest.fixture(scope="module")
def secured(tmp_path_factory, issuer):
    """A server requiring API keys or OAuth tokens, with CORS for one browser origin."""
    directory = tmp_path_factory.mktemp("secured")
    keys_file = directory / "keys.json"
    keys_file.write_text(json.dumps(KEYS))
    port = free_port()
    issuer.audience = f"http://127.0.0.1:{port}/mcp"
    env = {
        "MCP_API_KEYS_FILE": str(keys_file),
        "MCP_OAUTH_JWKS_URL": str(issuer.write_jwks(directory / "jwks.json")),
        "MCP_OAUTH_ISSUER": ISSUER,
        "MCP_OAUTH_AUDIENCE": issuer.audience,
        "MCP_OAUTH_REQUIRED_SCOPES": "mcp",
        "MCP_CORS_ORIGINS": "https://app.example.com",
    }
    with ServerProcess(env=env, port=port) as server:
        yield server


def http_as(token: str | None = None) -> httpx.Client:
    """An httpx client sending the given bearer token on every request."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(headers=headers, timeout=httpx.Timeout(15.0, connect=5.0))


def post_initialize(server, headers: dict[str, str] | None = None, **kwargs) -> httpx.Response:
    """POST an initialize with the given headers."""
    return httpx.post(server.url, json=initialize(VERSION), headers={"Accept": BOTH, **(headers or {})},
                      timeout=15.0, **kwargs)


def challenge_params(response: httpx.Response) -> dict[str, str]:
    """The parameters of a Bearer WWW-Authenticate header."""
    value = response.headers["WWW-Authenticate"]
    assert value.startswith("Bearer ")
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


# authentication
def test_a_request_without_a_token_gets_401_naming_the_resource_metadata(secured):
    refused = post_initialize(secured)
    assert refused.status_code == 401
    params = challenge_params(refused)
    assert params["resource_metadata"] == f"{secured.base_url}/.well-known/oauth-protected-resource/mcp"
    assert "error" not in params  # no credentials at all is not an invalid token
    assert refused.json()["error"]["message"].startswith("Unauthorized")
    # Every MCP route is covered, not only POST /mcp.
    assert httpx.get(secured.url, headers={"Accept": "text/event-stream"}, timeout=15).status_code == 401
    assert httpx.get(secured.base_url + "/sse", timeout=15).status_code == 401
    assert httpx.post(secured.base_url + "/messages?session_id=" + "0" * 32, json={}, timeout=15).status_code == 401


def test_the_metadata_names_the_authorization_server(secured):
    url = challenge_params(post_initialize(secured))["resource_metadata"]
    document = httpx.get(url, timeout=15).json()
    assert document["resource"] == secured.url
    assert document["authorization_servers"] == [ISSUER]
    assert httpx.get(secured.base_url + "/.well-known/oauth-protected-resource", timeout=15).status_code == 200


@pytest.mark.parametrize(
    "token",
    [new_key(), "garbage", "a.b.c"],
    ids=["unknown-api-key", "garbage", "malformed-jwt"],
)
def test_an_invalid_token_gets_401_invalid_token(secured, token):
    refused = post_initialize(secured, {"Authorization": f"Bearer {token}"})
    assert refused.status_code == 401
    assert challenge_params(refused)["error"] == "invalid_token"


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"lifetime_s": -300}, "expired"),
        ({"aud": "https://other.example/mcp"}, "not issued for this server"),
        ({"iss": "https://evil.example"}, "not issued by the expected"),
    ],
    ids=["expired", "wrong-audience", "wrong-issuer"],
)
def test_expired_and_misaddressed_tokens_get_401(secured, issuer, claims, reason):
    refused = post_initialize(secured, {"Authorization": f"Bearer {issuer.token(**claims)}"})
    assert refused.status_code == 401
    assert reason in refused.json()["error"]["message"]
    assert challenge_params(refused)["error"] == "invalid_token"


def test_a_token_signed_by_another_key_gets_401(secured, issuer):
    forged = TestIssuer(kid=issuer.kid, audience=issuer.audience).token()
    assert post_initialize(secured, {"Authorization": f"Bearer {forged}"}).status_code == 401


def test_a_token_without_the_required_scope_gets_403_insufficient_scope(secured, issuer):
    refused = post_initialize(secured, {"Authorization": f"Bearer {issuer.token(scopes='tools:*')}"})
    assert refused.status_code == 403
    params = challenge_params(refused)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "mcp"
    assert refused.json()["error"]["code"] == PERMISSION_DENIED


def test_tokens_in_the_query_string_are_ignored(secured, issuer):
    refused = post_initialize(secured, params={"access_token": ALICE_KEY})
    assert refused.status_code == 401
    assert "credentials in the URL are ignored" in refused.json()["error"]["message"]
    refused = post_initialize(secured, params={"access_token": issuer.token()})
    assert refused.status_code == 401


def test_error_bodies_never_echo_the_token(secured, issuer):
    for token in (new_key(), issuer.token(lifetime_s=-300), issuer.token(scopes="none")):
        refused = post_initialize(secured, {"Authorization": f"Bearer {token}"})
        assert token not in refused.text
        assert token not in refused.headers.get("WWW-Authenticate", "")
    assert ALICE_KEY not in secured.read_log()


# authorization
def test_an_api_key_sees_and_calls_only_its_tools(secured):
    with http_as(ALICE_KEY) as http:
        session = StreamableSession(http, secured.url, VERSION)
        listed = session.call(request("tools/list"))
        assert {t["name"] for t in listed["result"]["tools"]} == {"echo", "get_time"}
        denied = session.call(call_tool("add", {"a": 1, "b": 2}))
        assert denied["error"]["code"] == PERMISSION_DENIED
        assert denied["error"]["data"] == {"tool": "add"}
        echoed = session.call(call_tool("echo", {"text": "hi"}))
        assert echoed["result"]["isError"] is False


def test_token_scopes_decide_which_tools_a_principal_may_use(secured, issuer):
    with http_as(issuer.token(subject="carol", scopes="mcp tools:add")) as http:
        session = StreamableSession(http, secured.url, VERSION)
        assert [t["name"] for t in session.call(request("tools/list"))["result"]["tools"]] == ["add"]
        assert session.call(call_tool("add", {"a": 2, "b": 3}))["result"]["structuredContent"]["result"] == 5
        denied = session.call(call_tool("echo", {"text": "x"}))
        assert (denied["error"]["code"], denied["error"]["data"]) == (PERMISSION_DENIED, {"tool": "echo"})


def test_resources_and_prompts_are_filtered_and_refused_the_same_way(secured):
    with http_as(ALICE_KEY) as http:
        alice = StreamableSession(http, secured.url, VERSION)
        assert alice.call(request("resources/list"))["result"]["resources"] == []
        assert alice.call(request("resources/templates/list"))["result"]["resourceTemplates"] == []
        assert alice.call(request("prompts/list"))["result"]["prompts"] == []
        denied = alice.call(request("resources/read", {"uri": "config://server"}))
        assert (denied["error"]["code"], denied["error"]["data"]) == (PERMISSION_DENIED, {"resource": "config://server"})
        denied = alice.call(request("resources/subscribe", {"uri": "config://server"}))
        assert denied["error"]["code"] == PERMISSION_DENIED
        denied = alice.call(request("prompts/get", {"name": "code_review", "arguments": {"code": "x"}}))
        assert (denied["error"]["code"], denied["error"]["data"]) == (PERMISSION_DENIED, {"prompt": "code_review"})
    with http_as(BOB_KEY) as http:
        bob = StreamableSession(http, secured.url, VERSION)
        assert [r["uri"] for r in bob.call(request("resources/list"))["result"]["resources"]] == ["config://server"]
        assert "result" in bob.call(request("resources/read", {"uri": "config://server"}))
        assert [p["name"] for p in bob.call(request("prompts/list"))["result"]["prompts"]] == ["code_review"]


def test_a_legacy_stream_is_authorized_the_same_way(secured):
    with http_as(ALICE_KEY) as http, LegacyStream(http, secured.base_url) as stream:
        stream.open()
        denied = stream.call(call_tool("add", {"a": 1, "b": 2}))
        assert denied["error"]["code"] == PERMISSION_DENIED


# session binding
def test_another_principal_using_a_streamable_session_id_gets_404(secured):
    with http_as(ALICE_KEY) as alice, http_as(BOB_KEY) as bob:
        session = StreamableSession(alice, secured.url, VERSION)
        headers = {"Accept": BOTH, **session.headers}
        stolen = bob.post(secured.url, json=request("tools/list"), headers=headers)
        assert stolen.status_code == 404
        assert bob.delete(secured.url, headers=session.headers).status_code == 404
        assert bob.get(secured.url, headers={**session.headers, "Accept": "text/event-stream"}).status_code == 404
        # The owner still has the session: bob's attempts neither ended nor confirmed it.
        assert session.call(request("ping"))["result"] == {}


def test_another_principal_using_a_legacy_session_id_gets_404(secured, issuer):
    with http_as(ALICE_KEY) as alice, http_as(issuer.token(subject="mallory")) as mallory:
        with LegacyStream(alice, secured.base_url) as stream:
            stream.open()
            assert mallory.post(stream.endpoint, json=request("ping")).status_code == 404
            assert mallory.post(secured.base_url + "/messages?session_id=" + stream.session_id,
                                json=request("ping")).status_code == 404
            assert stream.call(request("ping", request_id="owner"))["result"] == {}


def test_the_same_principal_with_a_new_token_keeps_its_session(secured, issuer):
    with http_as(issuer.token(subject="dave", scopes="mcp tools:*")) as first:
        session = StreamableSession(first, secured.url, VERSION)
    with http_as(issuer.token(subject="dave", scopes="mcp tools:echo")) as refreshed:
        session.http = refreshed
        assert session.call(request("ping"))["result"] == {}
        # The new token's narrower scopes apply at once.
        assert session.call(call_tool("add", {"a": 1, "b": 1}))["error"]["code"] == PERMISSION_DENIED


# the official SDK, authenticating with a header
def test_the_sdk_client_connects_with_an_api_key_over_both_transports(secured):
    headers = {"Authorization": f"Bearer {ALICE_KEY}"}

    async def list_tools(transport: str) -> set[str]:
        if transport == "sse":
            streams = sse_client(secured.base_url + "/sse", headers=headers)
        else:
            streams = streamable_http_client(secured.url, http_client=create_mcp_http_client(headers=headers))
        with anyio.fail_after(30):
            async with streams as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return {tool.name for tool in (await session.list_tools()).tools}

    assert anyio.run(list_tools, "sse") == {"echo", "get_time"}
    assert anyio.run(list_tools, "streamable") == {"echo", "get_time"}


# CORS and headers on refusals
def test_cors_is_granted_to_the_configured_origin_only(secured):
    preflight = httpx.options(secured.url, headers={
        "Origin": "https://app.example.com", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id"}, timeout=15)
    assert preflight.status_code < 300  # a preflight never needs credentials
    assert preflight.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    assert "Authorization" in preflight.headers["Access-Control-Allow-Headers"]
    assert "Mcp-Session-Id" in preflight.headers["Access-Control-Allow-Headers"]
    refused = post_initialize(secured, {"Origin": "https://app.example.com"})
    assert refused.status_code == 401
    assert refused.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    assert "WWW-Authenticate" in refused.headers["Access-Control-Expose-Headers"]
    foreign = httpx.options(secured.url, headers={"Origin": "https://evil.example",
                                                  "Access-Control-Request-Method": "POST"}, timeout=15)
    assert foreign.status_code == 403
    assert "Access-Control-Allow-Origin" not in foreign.headers


def test_refusals_carry_the_security_headers(secured):
    refused = post_initialize(secured)
    assert refused.headers["X-Content-Type-Options"] == "nosniff"
    assert refused.headers["Cache-Control"] == "no-store"

"""Each call as its own caller: the grants and the credentials a call uses are those of the request that made it.

Host apps with a principal_loader, with API keys, and with both, driven through Flask's test client; two requests
of one principal run at once in two greenlets, as two clients would send them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import gevent
import gevent.event
import pytest
from flask import Flask, g, jsonify, request

from flask_mcp_gevent import MCP
from tests.extension.test_host_app import McpSession

# The host's own tokens: one user, alice, with a read-only token and a full-power one.
HOST_TOKENS = {"tok-read": ("alice", False), "tok-full": ("alice", True)}
MCP_KEY = "mcp_key_of_alice_0123456789abcdef"


def user_of(incoming: Any) -> tuple[str, bool] | None:
    """The host's login: its user and whether the token may write, from the Authorization header."""
    return HOST_TOKENS.get((incoming.headers.get("Authorization") or "").removeprefix("Bearer "))


def notes_app(settings: dict[str, Any] | None = None, forward_headers: tuple[str, ...] = (),
              loader: bool = True) -> tuple[Flask, dict[str, Any]]:
    """A notes app whose own login says who may write; MCP on it, with a slow tool and the routes as tools."""
    app = Flask(__name__)
    seen: dict[str, Any] = {"deleted": [], "headers": [], "started": gevent.event.Event(),
                            "release": gevent.event.Event()}

    @app.before_request
    def sign_in() -> Any:
        """The host's own check: a read-only token may not change notes."""
        g.user = user_of(request)
        if request.path.startswith("/notes") and request.method != "GET":
            if g.user is None or not g.user[1]:
                return jsonify(error="read-only"), 403
        return None

    @app.get("/notes/<int:note_id>")
    def get_note(note_id: int) -> Any:
        """Read a note, echoing the credential headers the host received."""
        seen["headers"].append({name: request.headers.get(name)
                                for name in ("Authorization", "Cookie", "X-Api-Key", "X-Other")})
        return jsonify(id=note_id, user=g.user[0] if g.user else None)

    @app.delete("/notes/<int:note_id>")
    def delete_note(note_id: int) -> Any:
        """Delete a note."""
        seen["deleted"].append(note_id)
        return "", 204

    mcp = MCP(app, settings=settings, forward_headers=forward_headers)
    seen["mcp"] = mcp

    @mcp.tool
    def slow_read(ctx: Any, note_id: int) -> dict[str, Any]:
        """Wait until released, then report what this call may do."""
        seen["started"].set()
        seen["release"].wait(5)
        return {"may_delete": ctx.permits("tool", "delete_note"), "principal": ctx.principal}

    if loader:
        @mcp.principal_loader
        def load(incoming: Any) -> dict[str, Any] | None:
            """The host's login as MCP grants: the read-only token reads, the full one may do everything."""
            user = user_of(incoming)
            if user is None:
                return None
            tools = ["*"] if user[1] else ["slow_read", "get_note"]
            return {"principal": user[0], "tools": tools, "resources": [], "prompts": []}

    mcp.expose_route("get_note")
    mcp.expose_route("delete_note")
    return app, seen


def api_keys_file(tmp_path: Path, tools: list[str]) -> str:
    """An API-keys file whose one key (MCP_KEY) is principal alice's, granting tools."""
    digest = hashlib.sha256(MCP_KEY.encode()).hexdigest()
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({digest: {"principal": "alice", "tools": tools, "resources": [], "prompts": []}}))
    return str(path)


@pytest.fixture
def notes():
    app, seen = notes_app()
    yield app, seen
    seen["release"].set()
    app.extensions["mcp"].shutdown()


def test_a_read_only_credentials_slow_call_stays_read_only_when_a_full_power_one_comes_meanwhile(notes):
    app, seen = notes
    client = app.test_client()
    read_only, full_power = McpSession(client, "tok-read"), McpSession(client, "tok-full")
    slow = gevent.spawn(read_only.call, "slow_read", {"note_id": 1})
    assert seen["started"].wait(5)
    # The same user, its full-power token, while the read-only call runs.
    assert full_power.call("get_note", {"note_id": 1})["structuredContent"]["user"] == "alice"
    seen["release"].set()
    assert slow.get(timeout=5)["structuredContent"] == {"may_delete": False, "principal": "app:alice"}
    # Nor does the full token's visit lift the read-only one's next call, in MCP's grants or in the host's check.
    refused = read_only.call("delete_note", {"note_id": 1})
    assert refused["code"] == -32001 and seen["deleted"] == []


def test_each_route_call_sends_the_host_its_own_requests_credentials(notes):
    app, seen = notes
    client = app.test_client()
    for token in ("tok-read", "tok-full", "tok-read"):
        McpSession(client, token).call("get_note", {"note_id": 2})
    assert [headers["Authorization"] for headers in seen["headers"]] == [
        "Bearer tok-read", "Bearer tok-full", "Bearer tok-read"]


def test_a_full_power_call_is_checked_by_the_host_as_full_power(notes):
    app, seen = notes
    answer = McpSession(app.test_client(), "tok-full").call("delete_note", {"note_id": 3})
    assert answer["isError"] is False and seen["deleted"] == [3]


def test_a_login_header_the_host_names_travels_and_no_other():
    app, seen = notes_app(forward_headers=("X-Api-Key",))
    try:
        client = app.test_client()
        client.set_cookie("sid", "42")  # the test client sends its own cookie jar, not a Cookie header
        session = McpSession(client, "tok-read")
        session.headers.update({"X-Api-Key": "host-key-1", "X-Other": "not forwarded"})
        session.call("get_note", {"note_id": 1})
        assert seen["headers"] == [{"Authorization": "Bearer tok-read", "Cookie": "sid=42", "X-Api-Key": "host-key-1",
                                    "X-Other": None}]
    finally:
        app.extensions["mcp"].shutdown()


def test_without_forward_headers_the_hosts_custom_login_header_stays_behind(notes):
    app, seen = notes
    session = McpSession(app.test_client(), "tok-read")
    session.headers["X-Api-Key"] = "host-key-1"
    session.call("get_note", {"note_id": 1})
    assert seen["headers"][0]["X-Api-Key"] is None


@pytest.mark.parametrize("name", ["X Api Key", "X-Api-Key\n", ""])
def test_a_bad_forward_header_name_stops_the_start(name):
    with pytest.raises(ValueError, match="not an HTTP header name"):
        MCP(Flask(__name__), forward_headers=(name,))


def test_credentials_over_the_bound_are_refused_with_431():
    app, _ = notes_app(settings={"caller_credentials_max_bytes": 100})
    try:
        client = app.test_client()
        session = McpSession(client, "tok-read")
        assert session.last_status == 200
        client.set_cookie("sid", "x" * 200)
        answer = session.post("tools/list", {})
        assert session.last_status == 431 and "MCP_CALLER_CREDENTIALS_MAX_BYTES" in answer["error"]["message"]
    finally:
        app.extensions["mcp"].shutdown()


def test_mcps_own_api_key_is_never_sent_to_the_hosts_routes(tmp_path):
    app, seen = notes_app(settings={"api_keys_file": api_keys_file(tmp_path, ["*"])}, loader=False)
    try:
        client = app.test_client()
        client.set_cookie("sid", "1")
        session = McpSession(client, MCP_KEY)
        answer = session.call("get_note", {"note_id": 1})
        assert answer["structuredContent"] == {"id": 1, "user": None}
        assert seen["headers"] == [{"Authorization": None, "Cookie": None, "X-Api-Key": None, "X-Other": None}]
    finally:
        app.extensions["mcp"].shutdown()


def cookie_login_app(tmp_path: Path) -> tuple[Flask, list[str | None]]:
    """A host whose login is a cookie, with MCP's API keys beside it; its route echoes the Authorization it gets."""
    app = Flask(__name__)
    received: list[str | None] = []

    @app.get("/whoami")
    def whoami() -> Any:
        """Echo the Authorization header the host received."""
        received.append(request.headers.get("Authorization"))
        return jsonify(ok=True)

    mcp = MCP(app, settings={"api_keys_file": api_keys_file(tmp_path, ["*"])})

    @mcp.principal_loader
    def load(incoming: Any) -> dict[str, Any] | None:
        """The host's cookie login."""
        known = incoming.cookies.get("sid") == "s1"
        return {"principal": "alice", "tools": ["*"], "resources": [], "prompts": []} if known else None

    mcp.expose_route("whoami")
    return app, received


def post_initialize(client: Any, headers: dict[str, str]) -> Any:
    """POST an initialize with these headers beside the usual ones; the response."""
    return client.post("/mcp", headers={"Content-Type": "application/json",
                                        "Accept": "application/json, text/event-stream", **headers},
                       data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                           "protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}))


@pytest.mark.parametrize("header", [f"Token {MCP_KEY}", f"Bearer\t{MCP_KEY}", f"Bearer {MCP_KEY}.",
                                    f"Basic x, Bearer {MCP_KEY}",
                                    "Basic " + base64.b64encode(f"{MCP_KEY}:".encode()).decode(),
                                    "basic " + base64.b64encode(f"alice:{MCP_KEY}".encode()).decode()])
def test_mcps_own_key_sent_malformed_is_refused_not_passed_to_the_hosts_routes(tmp_path, header):
    app, received = cookie_login_app(tmp_path)
    try:
        client = app.test_client()
        client.set_cookie("sid", "s1")  # the host's login would take the caller: MCP's key would then travel
        opened = post_initialize(client, {"Authorization": header})
        assert opened.status_code == 401
        assert "not as 'Bearer <key>'" in opened.get_json()["error"]["message"]
        assert received == []
    finally:
        app.extensions["mcp"].shutdown()


def test_mcps_own_key_in_a_cookie_is_refused_not_passed_to_the_hosts_routes(tmp_path):
    app, received = cookie_login_app(tmp_path)
    try:
        client = app.test_client()
        client.set_cookie("sid", "s1")  # the host's login would take the caller, and its Cookie header would travel
        client.set_cookie("key", MCP_KEY)
        opened = post_initialize(client, {})
        assert opened.status_code == 401
        assert "the Cookie header holds one of this server's API keys" in opened.get_json()["error"]["message"]
        assert received == []
    finally:
        app.extensions["mcp"].shutdown()


def test_the_hosts_own_authorization_scheme_still_travels_beside_mcps_keys(tmp_path):
    app, received = cookie_login_app(tmp_path)
    try:
        client = app.test_client()
        client.set_cookie("sid", "s1")
        session = McpSession(client, None)
        session.headers["Authorization"] = "Token mcp_host_token"  # not one of MCP's keys: the host's to read
        assert session.call("whoami", {})["structuredContent"] == {"ok": True}
        assert received == ["Token mcp_host_token"]
    finally:
        app.extensions["mcp"].shutdown()


def test_a_tool_the_caller_may_not_use_is_refused_before_its_mcp_param_headers_are_named():
    # On the 2026-07-28 wire a refusal naming a missing Mcp-Param header would show the hidden tool's inputSchema.
    app = Flask(__name__)
    mcp = MCP(app)

    @mcp.tool(input_schema={"type": "object", "properties": {"region": {"type": "string",
                                                                       "x-mcp-header": "Region"}}})
    def audit_region(region: str = "eu") -> str:
        """A tool only the full-power token may use."""
        return region

    @mcp.principal_loader
    def load(incoming: Any) -> dict[str, Any] | None:
        """Every caller is alice, who may use no tool."""
        return {"principal": "alice", "tools": [], "resources": [], "prompts": []}

    try:
        message = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "audit_region", "arguments": {"region": "us"},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}
        answer = app.test_client().post("/mcp", data=json.dumps(message), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "audit_region"})
        error = answer.get_json()["error"]
        assert (error["code"], error["data"]) == (-32001, {"tool": "audit_region"})
        assert "Region" not in json.dumps(answer.get_json())
    finally:
        app.extensions["mcp"].shutdown()


def test_with_keys_and_a_loader_each_keeps_its_own_grants_and_sessions(tmp_path):
    # The key's alice may call slow_read only; the loader's alice (full-power token) everything.
    app, seen = notes_app(settings={"api_keys_file": api_keys_file(tmp_path, ["slow_read"])})
    seen["release"].set()
    try:
        client = app.test_client()
        by_key, by_loader = McpSession(client, MCP_KEY), McpSession(client, "tok-full")
        assert by_key.last_status == 200, by_key.opened  # the key still gets in beside the loader
        assert by_key.tool_names() == {"slow_read"}
        assert by_loader.tool_names() == {"slow_read", "get_note", "delete_note"}
        assert by_key.call("slow_read", {"note_id": 1})["structuredContent"]["principal"] == "alice"
        assert by_loader.call("slow_read", {"note_id": 1})["structuredContent"]["principal"] == "app:alice"
        # A session opened with the key is no session of the loader's alice, and the other way round.
        by_key.headers["Authorization"] = "Bearer tok-full"
        assert by_key.post("tools/list", {}) and by_key.last_status == 404
        # MCP's key is not the host's credential: routes called as the key's alice carry nothing.
        key_again = McpSession(client, MCP_KEY)
        assert key_again.call("get_note", {"note_id": 1})["code"] == -32001
    finally:
        app.extensions["mcp"].shutdown()


def test_a_loader_answer_missing_a_field_is_a_500_naming_it(caplog):
    app = Flask(__name__)
    mcp = MCP(app)

    @mcp.principal_loader
    def load(incoming: Any) -> dict[str, Any]:
        return {"principal": "alice", "tools": ["*"]}

    try:
        with caplog.at_level(logging.ERROR, logger="mcp.auth"):
            session = McpSession(app.test_client(), None)
        assert session.last_status == 500
        assert "missing field(s) resources, prompts" in caplog.text
    finally:
        app.extensions["mcp"].shutdown()


def test_a_loader_answer_with_an_unknown_field_is_a_500_naming_it(caplog):
    app = Flask(__name__)
    mcp = MCP(app)

    @mcp.principal_loader
    def load(incoming: Any) -> dict[str, Any]:
        return {"principal": "alice", "tools": ["*"], "resources": [], "prompts": [], "tool": ["x"]}

    try:
        with caplog.at_level(logging.ERROR, logger="mcp.auth"):
            assert McpSession(app.test_client(), None).last_status == 500
        assert "unknown field(s) tool" in caplog.text
    finally:
        app.extensions["mcp"].shutdown()


@pytest.mark.parametrize("name", ["alice\n", "alice\r\n", "alice bob"])
def test_a_loader_principal_name_with_a_character_outside_the_allowed_ones_is_a_500(caplog, name):
    app = Flask(__name__)
    mcp = MCP(app)

    @mcp.principal_loader
    def load(incoming: Any) -> dict[str, Any]:
        return {"principal": name, "tools": ["*"], "resources": [], "prompts": []}

    try:
        with caplog.at_level(logging.ERROR, logger="mcp.auth"):
            assert McpSession(app.test_client(), None).last_status == 500
        assert "'principal' must be 1-128 characters" in caplog.text
    finally:
        app.extensions["mcp"].shutdown()


def test_routes_exposed_without_a_loader_are_named_in_a_warning_at_start(caplog):
    app, _ = notes_app(loader=False)
    try:
        with caplog.at_level(logging.WARNING, logger="mcp.http"):
            app.extensions["mcp"].start()
        assert "delete_note, get_note" in caplog.text and "principal_loader" in caplog.text
    finally:
        app.extensions["mcp"].shutdown()


def test_a_route_exposed_after_the_start_without_a_loader_is_named_in_a_warning(caplog):
    app, seen = notes_app(loader=False)
    try:
        app.extensions["mcp"].start()

        @app.get("/late")
        def late_view() -> str:
            """A view made a tool once the app had started."""
            return "late"

        caplog.clear()  # the start's own warning named the routes exposed before it
        with caplog.at_level(logging.WARNING, logger="mcp.http"):
            seen["mcp"].expose_route("late_view")
        assert "principal_loader" in caplog.text and caplog.text.rstrip().endswith(": late_view")
    finally:
        app.extensions["mcp"].shutdown()


def test_routes_exposed_with_a_loader_start_without_that_warning(notes, caplog):
    app, _ = notes
    with caplog.at_level(logging.WARNING, logger="mcp.http"):
        app.extensions["mcp"].start()
    assert "principal_loader" not in caplog.text


def test_a_task_runs_with_the_grants_of_the_request_that_started_it():
    app = Flask(__name__)
    mcp = MCP(app)
    release = gevent.event.Event()

    @mcp.tool(task="optional")
    def background(ctx: Any) -> dict[str, Any]:
        """Wait, then report what this run may do and whose credentials it carries."""
        release.wait(5)
        return {"may_delete": ctx.permits("tool", "delete_note"),
                "authorization": dict(ctx.caller.credentials).get("Authorization")}

    @mcp.principal_loader
    def load(incoming: Any) -> dict[str, Any] | None:
        user = user_of(incoming)
        if user is None:
            return None
        return {"principal": user[0], "tools": ["*"] if user[1] else ["background"], "resources": [], "prompts": []}

    client = app.test_client()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}

    def send(token: str, method: str, params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                   "Mcp-Method": method, "Authorization": f"Bearer {token}", **({"Mcp-Name": name} if name else {})}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        return client.post("/mcp", headers=headers, json=body).get_json()

    try:
        created = send("tok-read", "tools/call", {"name": "background", "arguments": {}}, "background")["result"]
        task_id = created["taskId"]
        # The full-power token of the same user looks at the task meanwhile.
        assert send("tok-full", "tasks/get", {"taskId": task_id}, task_id)["result"]["status"] == "working"
        release.set()
        for _ in range(500):
            task = send("tok-full", "tasks/get", {"taskId": task_id}, task_id)["result"]
            if task["status"] == "completed":
                break
            gevent.sleep(0.01)
        assert task["result"]["structuredContent"] == {"may_delete": False, "authorization": "Bearer tok-read"}
    finally:
        release.set()
        app.extensions["mcp"].shutdown()

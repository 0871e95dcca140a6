"""auth.oauth: JWT access tokens checked against a JWKS (file or URL), scopes, and RFC 9728 metadata."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flask_mcp_gevent.auth.oauth import OAuthVerifier
from flask_mcp_gevent.auth.principal import AuthUnavailable, InsufficientScope, Unauthenticated
from flask_mcp_gevent.auth.resource_metadata import metadata_document, metadata_url
from flask_mcp_gevent.config import ConfigError, Settings
from tests.oauth_issuer import AUDIENCE, ISSUER, TestIssuer


@pytest.fixture(scope="module")
def issuer():
    """One key pair for the module (RSA generation is the slow part)."""
    return TestIssuer()


def oauth_settings(jwks: str, **extra) -> Settings:
    """Settings for a resource server trusting the test issuer."""
    return Settings.from_mapping({"MCP_OAUTH_JWKS_URL": jwks, "MCP_OAUTH_ISSUER": ISSUER,
                                  "MCP_OAUTH_AUDIENCE": AUDIENCE, **extra})


@pytest.fixture
def verifier(issuer, tmp_path):
    """A verifier reading the issuer's JWKS from a file."""
    return OAuthVerifier(oauth_settings(str(issuer.write_jwks(tmp_path / "jwks.json"))))


def test_a_valid_token_names_its_subject_and_grants_its_scopes(issuer, verifier):
    principal = verifier.verify(issuer.token(subject="alice", scopes="mcp tools:add prompts:*"))
    assert principal.name == "oauth:alice"
    assert principal.via == "oauth"
    assert principal.grants.allows("tool", "add")
    assert not principal.grants.allows("tool", "echo")
    assert principal.grants.allows("prompt", "anything")


def test_scp_lists_are_read_as_scopes(issuer, verifier):
    principal = verifier.verify(issuer.token(scope=None, scp=["tools:echo"]))
    assert principal.grants.allows("tool", "echo")


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"lifetime_s": -120}, "expired"),
        ({"aud": "https://other.example/mcp"}, "not issued for this server"),
        ({"iss": "https://evil.example"}, "not issued by the expected"),
        ({"exp": None}, "required claim"),
        ({"sub": None}, "required claim"),
        ({"aud": None}, "required claim"),
        ({"nbf": 4102444800}, "not valid yet"),
        ({"kid": "unknown-key"}, "key this server does not know"),
    ],
)
def test_bad_tokens_are_refused_with_a_fixed_reason(issuer, verifier, overrides, reason):
    with pytest.raises(Unauthenticated, match=reason) as refused:
        verifier.verify(issuer.token(**overrides))
    assert refused.value.error == "invalid_token"


def test_a_token_signed_by_another_key_with_the_same_kid_is_refused(issuer, verifier):
    impostor = TestIssuer(kid=issuer.kid)
    with pytest.raises(Unauthenticated, match="signature"):
        verifier.verify(impostor.token())


def test_unsigned_and_symmetric_tokens_are_refused(issuer, verifier):
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "exp": 4102444800, "scope": "mcp tools:*"}
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none", "kid": issuer.kid}).encode()).rstrip(b"=")
    payload = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    with pytest.raises(Unauthenticated):
        verifier.verify(f"{header.decode()}.{payload.decode()}.")
    # HS256 keyed with the public key's text: the classic algorithm-confusion forgery (built by hand,
    # since PyJWT itself refuses to sign with a public key as an HMAC secret).
    secret = json.dumps(issuer.jwks()["keys"][0]).encode()
    header = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "kid": issuer.kid}).encode()).rstrip(b"=")
    signing_input = header + b"." + payload
    signature = base64.urlsafe_b64encode(hmac.new(secret, signing_input, hashlib.sha256).digest()).rstrip(b"=")
    with pytest.raises(Unauthenticated):
        verifier.verify((signing_input + b"." + signature).decode())


@pytest.mark.parametrize("garbage", ["a.b.c", "....", "eyJhbGciOiJSUzI1NiJ9.e30.", "x" * 20])
def test_garbage_is_refused_without_a_library_message(verifier, garbage):
    with pytest.raises(Unauthenticated) as refused:
        verifier.verify(garbage)
    # Our own sentences only: never PyJWT's wording, which names the library and its internals.
    assert str(refused.value) in {
        "the bearer token is neither a known API key nor a well-formed JWT",
        "the token's header has no key id (kid)",
    }


def test_required_scopes_are_enforced_as_insufficient_scope(issuer, tmp_path):
    settings = oauth_settings(str(issuer.write_jwks(tmp_path / "jwks.json")), MCP_OAUTH_REQUIRED_SCOPES="mcp")
    verifier = OAuthVerifier(settings)
    assert verifier.verify(issuer.token(scopes="mcp")).name == "oauth:alice"
    with pytest.raises(InsufficientScope) as refused:
        verifier.verify(issuer.token(scopes="tools:*"))
    assert refused.value.scopes == ("mcp",)


def test_a_rotated_jwks_file_is_picked_up_without_a_restart(issuer, tmp_path):
    path = issuer.write_jwks(tmp_path / "jwks.json")
    verifier = OAuthVerifier(oauth_settings(str(path)))
    rotated = TestIssuer(kid="test-key-2")
    with pytest.raises(Unauthenticated):
        verifier.verify(rotated.token())
    path.write_text(json.dumps({"keys": issuer.jwks()["keys"] + rotated.jwks()["keys"]}))
    assert verifier.verify(rotated.token()).name == "oauth:alice"


def test_a_missing_jwks_file_is_unavailable_not_unauthenticated(issuer, tmp_path):
    verifier = OAuthVerifier(oauth_settings(str(tmp_path / "absent.json")))
    with pytest.raises(AuthUnavailable):
        verifier.verify(issuer.token())


@pytest.mark.parametrize("text", ["<html>", "[]", '{"keys": []}', '{"keys": "x"}', '{"keys": [1]}',
                                  '{"keys": [{"kty": "bogus", "kid": "test-key-1"}]}'])
def test_a_jwks_file_holding_no_usable_key_set_is_unavailable_not_a_crash(issuer, tmp_path, text):
    path = tmp_path / "jwks.json"
    path.write_text(text)
    with pytest.raises(AuthUnavailable):
        OAuthVerifier(oauth_settings(str(path))).verify(issuer.token())


class JwksHandler(BaseHTTPRequestHandler):
    """Serves the JWKS set on the server object (bytes as they are)."""

    def do_GET(self):  # noqa: N802 (http.server's naming)
        jwks = self.server.jwks
        body = jwks if isinstance(jwks, bytes) else json.dumps(jwks).encode()
        # Counted before answering: the client may finish verifying before this thread runs again.
        self.server.hits += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_jwks_url_is_fetched_once_and_cached(issuer):
    server = ThreadingHTTPServer(("127.0.0.1", 0), JwksHandler)
    server.jwks, server.hits = issuer.jwks(), 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/jwks.json"
        verifier = OAuthVerifier(oauth_settings(url))
        for _ in range(3):
            assert verifier.verify(issuer.token()).name == "oauth:alice"
        assert server.hits == 1
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.mark.parametrize("answer", [b"<html>sign in to the proxy</html>", {"keys": []}, {"keys": "x"},
                                    {"keys": [{"kty": "bogus", "kid": "test-key-1"}]}],
                         ids=["not-json", "no-keys", "keys-not-a-list", "no-usable-key"])
def test_a_jwks_url_answering_no_usable_key_set_is_unavailable_not_a_crash(issuer, answer):
    server = ThreadingHTTPServer(("127.0.0.1", 0), JwksHandler)
    server.jwks, server.hits = answer, 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        verifier = OAuthVerifier(oauth_settings(f"http://127.0.0.1:{server.server_port}/jwks.json"))
        with pytest.raises(AuthUnavailable):
            verifier.verify(issuer.token())
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_an_unreachable_jwks_url_is_unavailable(issuer):
    from tests.e2e.server_process import free_port

    verifier = OAuthVerifier(oauth_settings(f"http://127.0.0.1:{free_port()}/jwks.json"))
    with pytest.raises(AuthUnavailable):
        verifier.verify(issuer.token())


def test_metadata_names_the_resource_and_its_authorization_server():
    settings = oauth_settings("/dev/null")
    document = metadata_document(settings)
    assert document["resource"] == AUDIENCE
    assert document["authorization_servers"] == [ISSUER]
    assert document["bearer_methods_supported"] == ["header"]
    explicit = oauth_settings("/dev/null", MCP_OAUTH_AUTHORIZATION_SERVERS="https://a.example,https://b.example")
    assert metadata_document(explicit)["authorization_servers"] == ["https://a.example", "https://b.example"]


def test_the_metadata_url_inserts_the_well_known_path_before_the_resource_path():
    assert metadata_url("https://mcp.example.com/mcp") == (
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
    assert metadata_url("https://mcp.example.com/") == "https://mcp.example.com/.well-known/oauth-protected-resource"


def test_oauth_settings_must_be_complete():
    with pytest.raises(ConfigError, match="MCP_OAUTH_ISSUER"):
        Settings.from_mapping({"MCP_OAUTH_JWKS_URL": "/tmp/jwks.json"})
    with pytest.raises(ConfigError, match="absolute resource URL"):
        oauth_settings("/tmp/jwks.json", MCP_OAUTH_AUDIENCE="mcp")


def b64url(data: bytes) -> str:
    """Unpadded base64url, as JWTs are written."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)
headers = st.one_of(json_values, st.fixed_dictionaries(
    {"alg": st.sampled_from(["RS256", "HS256", "none", "ES256", "", "RS256\u0000"])},
    optional={"kid": st.one_of(st.just("test-key-1"), json_values), "typ": json_values, "crit": json_values,
              "jku": st.just("http://127.0.0.1:9/jwks"), "x5u": st.just("file:///etc/passwd")}))


@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(header=headers, payload=json_values, signature=st.binary(max_size=300), raw=st.booleans())
def test_hostile_tokens_only_ever_raise_unauthenticated(verifier, header, payload, signature, raw):
    token = ".".join([b64url(json.dumps(header).encode()), b64url(json.dumps(payload).encode()),
                      b64url(signature)]) if not raw else b64url(signature)
    with pytest.raises(Unauthenticated):
        verifier.verify(token)

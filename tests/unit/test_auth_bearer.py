"""auth.bearer: reading the Authorization header and choosing between API keys and OAuth tokens."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.auth.api_keys import ApiKeyStore, hash_key, new_key
from flask_mcp_gevent.auth.bearer import Authenticator, bearer_token
from flask_mcp_gevent.auth.oauth import OAuthVerifier
from flask_mcp_gevent.auth.principal import Unauthenticated
from flask_mcp_gevent.config import Settings
from tests.oauth_issuer import AUDIENCE, ISSUER, TestIssuer


def test_the_token_is_read_from_a_bearer_header():
    assert bearer_token("Bearer abc.def-ghi_~+/=") == "abc.def-ghi_~+/="
    assert bearer_token("bearer   abc") == "abc"


@pytest.mark.parametrize(
    ("header", "error"),
    [
        (None, None),  # no credentials at all: the challenge carries no error code
        ("", None),
        ("Basic YWxpY2U6cGFzcw==", "invalid_request"),
        ("Bearer", "invalid_request"),
        ("Bearer two tokens", "invalid_request"),
        ("Bearer tok\u00e9n", "invalid_request"),
        ("Bearer " + "a" * 9000, "invalid_request"),
    ],
)
def test_missing_and_malformed_headers_are_unauthenticated(header, error):
    with pytest.raises(Unauthenticated) as refused:
        bearer_token(header)
    assert refused.value.error == error


@pytest.fixture(scope="module")
def issuer():
    """A key pair for minting tokens."""
    return TestIssuer()


@pytest.fixture
def authenticator(issuer, tmp_path):
    """Both API keys (alice) and OAuth tokens accepted."""
    key = new_key()
    store = ApiKeyStore.from_mapping({hash_key(key): {"principal": "alice", "tools": ["add"]}})
    settings = Settings.from_mapping({"MCP_OAUTH_JWKS_URL": str(issuer.write_jwks(tmp_path / "jwks.json")),
                                      "MCP_OAUTH_ISSUER": ISSUER, "MCP_OAUTH_AUDIENCE": AUDIENCE})
    authenticator = Authenticator(store, OAuthVerifier(settings))
    authenticator.test_key = key
    return authenticator


def test_api_keys_and_jwts_each_reach_their_verifier(authenticator, issuer):
    assert authenticator.authenticate(f"Bearer {authenticator.test_key}").name == "alice"
    assert authenticator.authenticate(f"Bearer {issuer.token(subject='bob')}").name == "oauth:bob"


def test_each_token_s_principal_carries_that_token_s_own_scopes(authenticator, issuer):
    narrow = authenticator.authenticate(f"Bearer {issuer.token(subject='bob', scopes='tools:echo')}")
    wide = authenticator.authenticate(f"Bearer {issuer.token(subject='bob', scopes='tools:*')}")
    assert narrow.allows("tool", "echo") and not narrow.allows("tool", "add")
    # A later, wider token of the same subject changes nothing for the first one's calls.
    assert wide.allows("tool", "add") and not narrow.allows("tool", "add")
    assert authenticator.authenticate(f"Bearer {authenticator.test_key}").allows("tool", "add")


def test_unknown_keys_are_refused(authenticator):
    with pytest.raises(Unauthenticated, match="unknown API key"):
        authenticator.authenticate(f"Bearer {new_key()}")


def test_a_jwt_is_refused_when_only_api_keys_are_configured(issuer):
    authenticator = Authenticator(ApiKeyStore.from_mapping({hash_key(new_key()): {"principal": "a"}}), None)
    with pytest.raises(Unauthenticated, match="not a credential this server accepts"):
        authenticator.authenticate(f"Bearer {issuer.token()}")


def test_no_authenticator_is_built_when_authentication_is_off():
    assert Authenticator.from_settings(Settings.from_environ({})) is None

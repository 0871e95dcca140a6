"""config: the security settings, and the refusal to listen beyond loopback without authentication."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.config import ConfigError, Settings, is_local_bind


@pytest.mark.parametrize("bind", ["127.0.0.1:8000", "127.0.0.2:80", "localhost:8000", "[::1]:8000", "::1",
                                  "unix:/run/mcp.sock", "localhost"])
def test_loopback_and_unix_binds_are_local(bind):
    assert is_local_bind(bind)


@pytest.mark.parametrize("bind", ["0.0.0.0:8000", "[::]:8000", "192.0.2.1:8000", "mcp.example.com:443",
                                  "fd://3", "127.example.com:80"])
def test_other_binds_are_exposed(bind):
    assert not is_local_bind(bind)


def test_the_default_loopback_bind_needs_no_authentication():
    settings = Settings.from_environ({})
    assert not settings.authentication_configured
    settings.check_exposure(["127.0.0.1:8000", "unix:/tmp/mcp.sock"])


def test_an_exposed_bind_without_authentication_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match="MCP_ALLOW_UNAUTHENTICATED=1") as refused:
        Settings.from_environ({"MCP_BIND": "0.0.0.0:8000"})
    assert "MCP_API_KEYS_FILE" in str(refused.value)
    with pytest.raises(ConfigError, match="192.0.2.1:80"):
        Settings.from_environ({}).check_exposure(["127.0.0.1:8000", "192.0.2.1:80"])


def test_an_exposed_bind_is_accepted_with_authentication_or_explicit_consent():
    Settings.from_environ({"MCP_BIND": "0.0.0.0:8000", "MCP_ALLOW_UNAUTHENTICATED": "1"})
    Settings.from_environ({"MCP_BIND": "0.0.0.0:8000", "MCP_API_KEYS_FILE": "/etc/mcp/keys.json"})
    Settings.from_environ({"MCP_BIND": "0.0.0.0:8000", "MCP_OAUTH_JWKS_URL": "https://auth.example/jwks",
                           "MCP_OAUTH_ISSUER": "https://auth.example", "MCP_OAUTH_AUDIENCE": "https://m.example/mcp"})


def test_security_defaults_keep_the_server_open_on_loopback():
    settings = Settings.from_environ({})
    assert settings.rate_limit == ""
    assert settings.cors_origins == ()
    assert settings.allow_unauthenticated is False


@pytest.mark.parametrize("name", ["MCP_MAX_JSON_DEPTH", "MCP_MAX_STRING_BYTES", "MCP_MAX_BATCH",
                                  "MCP_MAX_ARGUMENT_BYTES", "MCP_MAX_SESSIONS_PER_PRINCIPAL",
                                  "MCP_MAX_CONCURRENT_CALLS"])
def test_limits_must_be_positive(name):
    with pytest.raises(ConfigError, match=name):
        Settings.from_environ({name: "0"})


def test_a_rate_limit_must_be_readable():
    assert Settings.from_environ({"MCP_RATE_LIMIT": "600/minute"}).rate_limit == "600/minute"
    with pytest.raises(ConfigError, match="MCP_RATE_LIMIT"):
        Settings.from_environ({"MCP_RATE_LIMIT": "lots"})

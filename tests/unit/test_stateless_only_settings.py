"""MCP_SESSION_ERA: on by default; off, several workers need no Redis and only 2026-07-28 is named."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.config import ConfigError, Settings
from flask_mcp_gevent.stateless.metadata import STATELESS_VERSIONS, SUPPORTED_VERSIONS, supported_versions


def test_the_session_era_is_on_by_default():
    assert Settings.from_environ({}).session_era is True


def test_several_workers_without_redis_are_refused_while_the_session_era_is_on():
    with pytest.raises(ConfigError, match="MCP_SESSION_ERA=0"):
        Settings.from_environ({"MCP_WORKERS": "2"})


def test_several_workers_without_redis_are_allowed_with_the_session_era_off():
    assert Settings.from_environ({"MCP_WORKERS": "4", "MCP_SESSION_ERA": "0"}).workers == 4


def test_only_the_stateless_versions_are_named_with_the_session_era_off():
    assert supported_versions(False) == STATELESS_VERSIONS
    assert supported_versions(True) == SUPPORTED_VERSIONS


def test_the_old_name_mcp_legacy_still_works_with_a_deprecation_note(caplog):
    with caplog.at_level("WARNING", logger="mcp.settings"):
        settings = Settings.from_environ({"MCP_LEGACY": "0"})
    assert settings.session_era is False
    assert "MCP_LEGACY is deprecated: it is now MCP_SESSION_ERA" in caplog.text


def test_the_new_name_wins_over_the_old_one():
    assert Settings.from_environ({"MCP_LEGACY": "0", "MCP_SESSION_ERA": "1"}).session_era is True

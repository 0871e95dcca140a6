"""MCP_LEGACY: on by default; off, several workers need no Redis and only 2026-07-28 is named."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.config import ConfigError, Settings
from flask_mcp_gevent.stateless.metadata import STATELESS_VERSIONS, SUPPORTED_VERSIONS, supported_versions


def test_legacy_is_on_by_default():
    assert Settings.from_environ({}).legacy is True


def test_several_workers_without_redis_are_refused_while_legacy_is_on():
    with pytest.raises(ConfigError, match="MCP_LEGACY=0"):
        Settings.from_environ({"MCP_WORKERS": "2"})


def test_several_workers_without_redis_are_allowed_with_legacy_off():
    assert Settings.from_environ({"MCP_WORKERS": "4", "MCP_LEGACY": "0"}).workers == 4


def test_only_the_stateless_versions_are_named_with_legacy_off():
    assert supported_versions(False) == STATELESS_VERSIONS
    assert supported_versions(True) == SUPPORTED_VERSIONS

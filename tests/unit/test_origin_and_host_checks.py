"""security: which Origin and Host headers may reach a session."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.config import LOCALHOST_ORIGINS
from flask_mcp_gevent.web.pipeline import host_allowed
from flask_mcp_gevent.web.response_headers import origin_allowed


@pytest.mark.parametrize(
    "origin",
    ["http://localhost:6274", "http://localhost", "https://127.0.0.1:8443", "http://[::1]:3000",
     "HTTP://LOCALHOST:6274", "http://localhost:6274/"],
)
def test_localhost_origins_are_allowed_by_default(origin):
    assert origin_allowed(origin, LOCALHOST_ORIGINS)


@pytest.mark.parametrize(
    "origin",
    ["https://evil.example", "http://localhost.evil.example", "http://localhost:80.evil.example",
     "http://127.0.0.1.nip.io:8000", "http://localhost:abc", "null", "file://", ""],
)
def test_foreign_origins_are_refused_by_default(origin):
    assert not origin_allowed(origin, LOCALHOST_ORIGINS)


def test_exact_origin_patterns_match_only_themselves():
    patterns = ["https://app.example.com"]
    assert origin_allowed("https://app.example.com", patterns)
    assert not origin_allowed("https://app.example.com:8443", patterns)
    assert not origin_allowed("http://app.example.com", patterns)


def test_star_allows_any_origin():
    assert origin_allowed("https://anything.example", ["*"])


def test_no_patterns_allow_no_origin():
    assert not origin_allowed("http://localhost:1", [])


@pytest.mark.parametrize("host", ["localhost:8000", "127.0.0.1:8000", "[::1]:8000", "localhost", "LOCALHOST:1"])
def test_loopback_hosts_are_allowed_on_a_loopback_listener(host):
    assert host_allowed(host, (), listener_is_loopback=True)


@pytest.mark.parametrize("host", ["evil.example:8000", "attacker.localhost.example", "10.0.0.1:8000", ""])
def test_other_hosts_are_refused_on_a_loopback_listener(host):
    assert not host_allowed(host, (), listener_is_loopback=True)


def test_any_host_is_allowed_on_a_public_listener_without_a_list():
    assert host_allowed("mcp.example.com", (), listener_is_loopback=False)


def test_an_allowed_hosts_list_is_enforced_on_any_listener():
    allowed = ("mcp.example.com",)
    assert host_allowed("mcp.example.com:443", allowed, listener_is_loopback=False)
    assert not host_allowed("other.example.com", allowed, listener_is_loopback=False)
    assert not host_allowed("localhost:8000", allowed, listener_is_loopback=True)


def test_an_allowed_host_with_port_matches_by_name():
    assert host_allowed("mcp.example.com:8443", ("mcp.example.com:8443",), listener_is_loopback=False)


def test_star_in_allowed_hosts_allows_any_host():
    assert host_allowed("whatever.example", ("*",), listener_is_loopback=True)

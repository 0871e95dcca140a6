"""config: every setting comes from an MCP_* variable of an injected mapping, cast and checked."""

from __future__ import annotations

import dataclasses

import pytest

from flask_mcp_gevent.config import (
    LOCALHOST_ORIGINS,
    ConfigError,
    Settings,
    cast_setting,
    is_loopback_host,
    parse_bool,
    parse_list,
)

SAMPLES = {"str": ("x", "x"), "str | None": ("", ""), "int": ("7", 7), "float": ("2.5", 2.5), "bool": ("yes", True),
           "tuple[str, ...]": ("a, b,,", ("a", "b"))}
FIELDS = [f for f in dataclasses.fields(Settings) if f.name != "extra"]


def test_defaults_match_the_documented_ones():
    settings = Settings.from_environ({})
    assert settings.bind == "127.0.0.1:8000"
    assert settings.workers == 1
    assert settings.keepalive_s == 15.0
    assert settings.max_body_bytes == 4 * 1024 * 1024
    assert settings.allowed_origins == LOCALHOST_ORIGINS
    assert settings.plugins == ()
    assert settings.redis_url == ""


def test_from_environ_does_not_read_os_environ(monkeypatch):
    monkeypatch.setenv("MCP_PAGE_SIZE", "3")
    assert Settings.from_environ({}).page_size == Settings().page_size


@pytest.mark.parametrize("spec", FIELDS, ids=[f.name for f in FIELDS])
def test_every_setting_has_a_type_an_environment_string_can_be_cast_to(spec):
    raw, expected = SAMPLES[spec.type]
    assert cast_setting(f"MCP_{spec.name.upper()}", raw, spec.type) == expected


@pytest.mark.parametrize(
    "key, raw, name, expected",
    [
        ("MCP_KEEPALIVE_S", "2.5", "keepalive_s", 2.5),
        ("MCP_PAGE_SIZE", "7", "page_size", 7),
        ("MCP_PLUGINS", "a.b,c", "plugins", ("a.b", "c")),
        ("MCP_SERVER_NAME", "mine", "server_name", "mine"),
        ("MCP_BIND", "127.0.0.1:9000", "bind", "127.0.0.1:9000"),
    ],
)
def test_settings_are_read_from_their_mcp_variables(key, raw, name, expected):
    assert getattr(Settings.from_environ({key: raw}), name) == expected


def test_lists_are_comma_separated_and_trimmed():
    settings = Settings.from_environ({"MCP_ALLOWED_ORIGINS": " https://a.example , http://localhost:* ,"})
    assert settings.allowed_origins == ("https://a.example", "http://localhost:*")
    assert parse_list("") == ()


@pytest.mark.parametrize("raw, value", [("1", True), ("TRUE", True), ("on", True), ("0", False), ("no", False),
                                        ("", False), (" Off ", False)])
def test_booleans_read_the_usual_spellings(raw, value):
    assert parse_bool(raw) is value


def test_an_unreadable_boolean_is_an_error():
    with pytest.raises(ValueError):
        parse_bool("maybe")


@pytest.mark.parametrize("key, raw", [("MCP_PAGE_SIZE", "ten"), ("MCP_KEEPALIVE_S", "soon"), ("MCP_WORKERS", "1.5")])
def test_an_unreadable_value_names_the_variable(key, raw):
    with pytest.raises(ConfigError, match=key):
        Settings.from_environ({key: raw})


@pytest.mark.parametrize(
    "environ, fragment",
    [
        ({"MCP_WORKERS": "0"}, "MCP_WORKERS"),
        ({"MCP_WORKERS": "2"}, "MCP_REDIS_URL"),
        ({"MCP_LOG_FORMAT": "xml"}, "MCP_LOG_FORMAT"),
        ({"MCP_KEEPALIVE_S": "0"}, "MCP_KEEPALIVE_S"),
        ({"MCP_SESSION_TTL_S": "-1"}, "MCP_SESSION_TTL_S"),
        ({"MCP_MAX_BODY_BYTES": "0"}, "MCP_MAX_BODY_BYTES"),
        ({"MCP_QUEUE_MAX": "0"}, "MCP_QUEUE_MAX"),
        ({"MCP_PAGE_SIZE": "0"}, "MCP_PAGE_SIZE"),
        ({"MCP_TASKS_MAX_BYTES": "100"}, "MCP_TASKS_MAX_BYTES"),
    ],
)
def test_unusable_settings_are_rejected_with_the_variable_to_fix(environ, fragment):
    with pytest.raises(ConfigError, match=fragment):
        Settings.from_environ(environ)


def test_several_workers_work_with_redis():
    settings = Settings.from_environ({"MCP_WORKERS": "4", "MCP_REDIS_URL": "redis://127.0.0.1:6379/0"})
    assert settings.workers == 4


SENTINELS = "10.0.0.1:26379,10.0.0.2:26379"


@pytest.mark.parametrize(
    "environ, fragment",
    [
        ({"MCP_REDIS_SENTINELS": SENTINELS}, "MCP_REDIS_SENTINEL_MASTER"),
        ({"MCP_REDIS_SENTINELS": "10.0.0.1", "MCP_REDIS_SENTINEL_MASTER": "m"}, "'10.0.0.1' is not host:port"),
        ({"MCP_REDIS_SENTINELS": "10.0.0.1:0", "MCP_REDIS_SENTINEL_MASTER": "m"}, "is not host:port"),
        ({"MCP_REDIS_SENTINELS": ":26379", "MCP_REDIS_SENTINEL_MASTER": "m"}, "is not host:port"),
        ({"MCP_REDIS_SENTINELS": "h:port", "MCP_REDIS_SENTINEL_MASTER": "m"}, "is not host:port"),
        ({"MCP_REDIS_SENTINEL_MASTER": "m"}, "need MCP_REDIS_SENTINELS"),
        ({"MCP_REDIS_SENTINEL_PASSWORD": "secret"}, "need MCP_REDIS_SENTINELS"),
        ({"MCP_REDIS_SENTINELS": SENTINELS, "MCP_REDIS_SENTINEL_MASTER": "m", "MCP_REDIS_CLUSTER": "1",
          "MCP_REDIS_URL": "redis://10.0.0.1:6379"}, "exclude each other"),
        ({"MCP_REDIS_CLUSTER": "1"}, "MCP_REDIS_CLUSTER=1 needs MCP_REDIS_URL"),
        ({"MCP_REDIS_CLUSTER": "1", "MCP_REDIS_URL": "redis://10.0.0.1:6379/3"}, "database 0 only"),
        ({"MCP_REDIS_CLUSTER": "maybe", "MCP_REDIS_URL": "redis://10.0.0.1:6379"}, "MCP_REDIS_CLUSTER"),
        ({"MCP_REDIS_URL": "http://10.0.0.1:6379"}, "must start with redis://"),
    ],
)
def test_unusable_redis_setups_are_rejected_at_startup_with_what_to_fix(environ, fragment):
    with pytest.raises(ConfigError, match=fragment):
        Settings.from_environ(environ)


def test_sentinels_alone_make_a_redis_fleet_and_their_password_stays_secret():
    settings = Settings.from_environ({"MCP_WORKERS": "4", "MCP_REDIS_SENTINELS": SENTINELS + ",[::1]:26380",
                                      "MCP_REDIS_SENTINEL_MASTER": "mymaster", "MCP_REDIS_SENTINEL_PASSWORD": "s3"})
    assert settings.uses_redis and settings.redis_sentinels == ("10.0.0.1:26379", "10.0.0.2:26379", "[::1]:26380")
    assert "MCP_REDIS_SENTINEL_PASSWORD" not in settings.extra and "s3" not in repr(settings)


def test_a_cluster_needs_only_one_node_s_url():
    settings = Settings.from_environ({"MCP_WORKERS": "2", "MCP_REDIS_CLUSTER": "1",
                                      "MCP_REDIS_URL": "redis://10.0.0.1:6379/0"})
    assert settings.redis_cluster and settings.uses_redis


def test_unknown_mcp_variables_are_kept_in_extra_and_others_ignored():
    settings = Settings.from_environ({"MCP_SOMETHING_NEW": "1", "HOME": "/root", "MCP_BIND": "127.0.0.1:9"})
    assert settings.extra == {"MCP_SOMETHING_NEW": "1", "MCP_BIND": "127.0.0.1:9"}


def test_from_mapping_takes_variable_or_field_names():
    settings = Settings.from_mapping({"MCP_PAGE_SIZE": 5, "server_name": "test-server"})
    assert (settings.page_size, settings.server_name) == (5, "test-server")
    assert Settings.from_mapping(None) == Settings.from_environ({})


def test_overrides_are_checked_too():
    with pytest.raises(ConfigError):
        Settings.from_environ({}, page_size=0)


@pytest.mark.parametrize(
    "host, loopback",
    [("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("[::1]", True), ("::1", True),
     ("LOCALHOST", True), ("0.0.0.0", False), ("::", False), ("10.1.2.3", False), ("127.example.com", False),
     ("", False)],
)
def test_loopback_host_detection(host, loopback):
    assert is_loopback_host(host) is loopback


def test_tools_see_their_own_settings_in_extra_but_not_the_servers_secrets():
    settings = Settings.from_environ({"MCP_WEATHER_API_URL": "https://weather.example",
                                      "MCP_REQUEST_STATE_KEY": "ab" * 32})
    assert settings.extra["MCP_WEATHER_API_URL"] == "https://weather.example"
    assert "MCP_REQUEST_STATE_KEY" not in settings.extra
    assert settings.request_state_key == "ab" * 32

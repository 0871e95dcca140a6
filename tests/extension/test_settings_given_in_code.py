"""Settings given in code, by MCP(settings=...) or app.config: a value of the wrong type stops the start naming
it (not a TypeError at start, nor a 500 at the first request); text is read as an environment variable's is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from flask_mcp_gevent import MCP
from flask_mcp_gevent.config import ConfigError, Settings


def started(settings: dict[str, Any] | None = None, config: dict[str, Any] | None = None) -> Settings:
    """The settings an app with MCP started with (its server shut down)."""
    app = Flask(__name__)
    app.config.update(config or {})
    MCP(app, settings=settings)
    extension = app.extensions["mcp"]
    extension.shutdown()
    return extension.settings


@pytest.mark.parametrize(("given", "refusal"), [
    ({"page_size": "many"}, r"MCP\(settings=...\): page_size='many' is not a valid int"),
    ({"page_size": None}, r"MCP\(settings=...\): page_size=None is not a valid int"),
    ({"keepalive_s": "soon"}, r"MCP\(settings=...\): keepalive_s='soon' is not a valid float"),
    ({"log_format": 1}, r"MCP\(settings=...\): log_format=1 is not a valid str"),
    ({"allowed_origins": [1]}, r"MCP\(settings=...\): allowed_origins=\[1\] is not a valid tuple"),
])
def test_a_settings_value_of_the_wrong_type_stops_the_start_naming_it(given, refusal):
    with pytest.raises(ConfigError, match=refusal):
        started(settings=given)


@pytest.mark.parametrize(("config", "refusal"), [
    ({"MCP_PAGE_SIZE": 7.5}, r"MCP_PAGE_SIZE=7.5 is not a valid int"),
    ({"MCP_PAGE_SIZE": None}, r"MCP_PAGE_SIZE=None is not a valid int"),
    ({"MCP_PAGE_SIZE": True}, r"MCP_PAGE_SIZE=True is not a valid int"),
    ({"MCP_BODY_TIMEOUT_S": True}, r"MCP_BODY_TIMEOUT_S=True is not a valid float"),
    ({"MCP_CONSOLE": "maybe"}, r"MCP_CONSOLE='maybe' is not a valid bool"),
])
def test_an_app_config_value_of_the_wrong_type_stops_the_start_naming_the_key(config, refusal):
    with pytest.raises(ConfigError, match=refusal):
        started(config=config)


def test_text_in_settings_is_read_as_the_environments_and_values_of_the_right_type_are_kept(tmp_path):
    settings = started(settings={"page_size": "50", "allowed_origins": "https://a.example,https://b.example",
                                 "keepalive_s": 5, "console": 0, "files_root": Path(tmp_path)})
    assert (settings.page_size, settings.keepalive_s, settings.console) == (50, 5.0, False)
    assert settings.allowed_origins == ("https://a.example", "https://b.example")
    assert settings.files_root == str(tmp_path)
    configured = started(config={"MCP_PAGE_SIZE": 7, "MCP_ALLOWED_ORIGINS": ["https://c.example"],
                                 "MCP_REDIS_URL": None})
    assert (configured.page_size, configured.allowed_origins, configured.redis_url) == (7, ("https://c.example",), "")

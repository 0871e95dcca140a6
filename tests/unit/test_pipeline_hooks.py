"""Every Flask hook on the MCP routes is one the WSGI hot path mirrors, so the two ways in cannot drift apart."""

from __future__ import annotations

from flask import Flask

from app import create_app
from flask_mcp_gevent.web.flask_hooks import FLASK_ONLY_HOOKS, installed_hooks, pipeline_hooks
from tests.unit.test_pipeline_hot_path import hot_path_of


def hot_path_enabled(app: Flask) -> bool:
    """Whether the app's hot path answers POSTs itself."""
    return hot_path_of(app).enabled


def test_a_default_app_runs_exactly_the_hooks_the_hot_path_mirrors():
    app = create_app({})
    assert hot_path_enabled(app)
    assert installed_hooks(app) == pipeline_hooks()


def test_hooks_beyond_the_pipeline_come_only_with_settings_that_turn_the_hot_path_off():
    for config in ({"MCP_RATE_LIMIT": "10/second"}, {"MCP_CORS_ORIGINS": "https://app.example"},
                   {"MCP_RATE_LIMIT": "10/second", "MCP_CORS_ORIGINS": "https://app.example"}):
        app = create_app(config)
        extra = installed_hooks(app) - pipeline_hooks()
        assert extra and extra <= FLASK_ONLY_HOOKS, config
        assert pipeline_hooks() <= installed_hooks(app)
        assert not hot_path_enabled(app)


def test_a_new_flask_hook_is_noticed():
    app = create_app({})

    @app.before_request
    def stamp_request_id() -> None:
        """A hook the hot path would silently skip."""

    assert installed_hooks(app) != pipeline_hooks()
    assert any("stamp_request_id" in hook for hook in installed_hooks(app) - pipeline_hooks())


def test_a_hook_on_the_mcp_blueprint_is_noticed_too():
    app = create_app({})
    app.after_request_funcs.setdefault("mcp", []).append(lambda response: response)
    assert installed_hooks(app) != pipeline_hooks()

"""Fixtures shared by every layer: an app built from a settings dict, and its test client."""

from __future__ import annotations

import pytest

from app import create_app
from flask_mcp_gevent.config import Settings


@pytest.fixture
def settings() -> Settings:
    """Default settings, independent of the environment the tests run in."""
    return Settings.from_environ({})


@pytest.fixture
def app(settings):
    """An app on the default (in-memory) store."""
    return create_app(settings)


@pytest.fixture
def client(app):
    """Flask's test client for app."""
    return app.test_client()

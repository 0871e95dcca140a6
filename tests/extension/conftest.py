"""The extension's tests: self-contained, so CI also runs them against the wheel installed outside the checkout.

They import only the package and this folder (tests/e2e/test_wheel_install.py copies it out and runs it with the
fresh venv's Python). MCP_EXPECT_INSTALLED=1 makes them prove they test the installed copy, not a checkout.
"""

from __future__ import annotations

import os

import flask_mcp_gevent


def pytest_sessionstart(session) -> None:
    """With MCP_EXPECT_INSTALLED=1, refuse to run against anything but an installed package."""
    if os.environ.get("MCP_EXPECT_INSTALLED") == "1" and "site-packages" not in flask_mcp_gevent.__file__:
        raise RuntimeError(f"expected the installed package, found {flask_mcp_gevent.__file__}")

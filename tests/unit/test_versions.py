"""versions: negotiation and the behaviour switches that follow the negotiated version."""

from __future__ import annotations

import pytest

from flask_mcp_gevent.session import LATEST, SUPPORTED, allows_batches, at_least, negotiate


@pytest.mark.parametrize("version", SUPPORTED)
def test_a_supported_version_is_echoed(version):
    assert negotiate(version) == version


@pytest.mark.parametrize("requested", ["2024-10-07", "2026-01-01", "", None, 20250618, ["2025-06-18"]])
def test_anything_else_gets_the_latest(requested):
    assert negotiate(requested) == LATEST


def test_supported_versions_are_in_date_order_ending_with_latest():
    assert list(SUPPORTED) == sorted(SUPPORTED)
    assert LATEST == SUPPORTED[-1] == "2025-11-25"


@pytest.mark.parametrize(
    "version, floor, expected",
    [("2025-06-18", "2025-06-18", True), ("2025-11-25", "2025-06-18", True),
     ("2025-03-26", "2025-06-18", False), (None, "2024-11-05", False)],
)
def test_at_least_compares_dates(version, floor, expected):
    assert at_least(version, floor) is expected


@pytest.mark.parametrize("version, expected", [("2024-11-05", False), ("2025-03-26", True), ("2025-06-18", False),
                                               ("2025-11-25", False), (None, False)])
def test_batches_exist_only_in_2025_03_26(version, expected):
    assert allows_batches(version) is expected
